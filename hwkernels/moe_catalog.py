"""MoE bench configs: the one-GPU scenario catalog, a built-in list, or scenario TOML files.

    load_configs("")                        -> xsim.moe.catalog.one_gpu_configs() when that
                                               module exists (moesim's catalog), else BUILTIN
    load_configs("moe1-...,qwen3-bf16-zipf,x.toml")  catalog or built-in names, TOML files

A TOML config gives the MoEShape fields, a routing kind, skew and seed (and optionally
Algorithm 1's ``lead``, the shipped one-GPU scenarios' pick of the what-if tool) at the top level, in
a [params] table (the shipped scenarios' layout), or in [shape] and [routing] tables
(routing.kind); a file may hold several configs as [[config]] entries. The built-in shapes are stand-ins with the layer sizes of public
models (hidden, moe intermediate, experts, top-k from their published configs): Qwen3-235B
(4096, 1536, 128, 8), DeepSeek-V3 (7168, 2048, 256, 8), Mixtral-8x7B (4096, 14336, 8, 2);
tokens chosen so the balanced case fills 128-row m-blocks (512 rows for Mixtral: the
compute-bound negative control).
"""

from dataclasses import dataclass, fields
from pathlib import Path

from xsim.moe.shapes import MoEShape

SHAPE_FIELDS = tuple(f.name for f in fields(MoEShape))
FAMILIES = {"qwen3": dict(hidden=4096, intermediate=1536, experts=128, topk=8, tokens=2048),
            "dsv3": dict(hidden=7168, intermediate=2048, experts=256, topk=8, tokens=4096),
            "mixtral": dict(hidden=4096, intermediate=14336, experts=8, topk=2, tokens=2048)}
ROUTINGS = {"balanced": 0.0, "zipf": 1.2, "hot": 0.5}


@dataclass(frozen=True)
class Config:
    name: str
    shape: MoEShape
    routing: str = "balanced"
    skew: float = 0.0
    seed: int = 0
    lead: float | None = None     # Algorithm 1's lead (None: the scheduler's default)

    def params(self, schedule: str, lead: float, destination: str) -> dict:
        s = self.shape
        shape = {k: getattr(s, k) for k in SHAPE_FIELDS}
        return {"config": self.name, "schedule": schedule, **shape, "routing": self.routing,
                "skew": self.skew, "seed": self.seed, "lead": lead, "destination": destination}


def _builtin() -> dict:
    out = {}
    for fam, dims in FAMILIES.items():
        for prec in ("bf16", "fp8"):
            for routing, skew in ROUTINGS.items():
                name = f"{fam}-{prec}-{routing}"
                out[name] = Config(name, MoEShape(**dims, precision=prec), routing, skew, 0)
    return out


BUILTIN = _builtin()


def catalog() -> dict:
    """The one-GPU scenario catalog by name: the shipped ``scenarios/moe1-*.toml`` (the same files
    ``xsim simulate`` predicts from; read with tomllib only, so no simulator import here)."""
    from importlib import resources

    out = {}
    for entry in sorted(resources.files("scenarios").iterdir(), key=lambda e: e.name):
        if entry.name.startswith("moe1-") and entry.name.endswith(".toml"):
            with resources.as_file(entry) as path:
                out.update((c.name, c) for c in load_toml(path))
    return out


def _from_table(t: dict, default_name: str) -> Config:
    t = {**t, **t.get("params", {})}
    shape = dict(t.get("shape", {}))
    shape.update({k: t[k] for k in SHAPE_FIELDS if k in t})
    r = t.get("routing", "balanced")
    if isinstance(r, dict):
        kind, skew, seed = r.get("kind", "balanced"), r.get("skew", 0.0), r.get("seed", 0)
    else:
        kind, skew, seed = r, t.get("skew", 0.0), t.get("seed", 0)
    lead = t.get("lead")
    return Config(str(t.get("name", default_name)),
                  MoEShape(**{k: v for k, v in shape.items() if k in SHAPE_FIELDS}), kind,
                  float(skew), int(seed), None if lead is None else float(lead))


def load_toml(path: Path) -> list[Config]:
    import tomllib

    with open(path, "rb") as f:
        doc = tomllib.load(f)
    entries = doc.get("config", [doc])
    return [_from_table(t, f"{path.stem}-{i}" if len(entries) > 1 else path.stem)
            for i, t in enumerate(entries)]


def load_configs(spec: str) -> list[Config]:
    known = catalog()
    if not spec:
        return list(known.values()) or list(BUILTIN.values())
    known = {**BUILTIN, **known}
    out = []
    for item in (s.strip() for s in spec.split(",") if s.strip()):
        if item in known:
            out.append(known[item])
        elif item.endswith(".toml"):
            out.extend(load_toml(Path(item)))
        else:
            raise ValueError(f'"configs": unknown config {item!r} (not built in, not a .toml)')
    return out


LEAD_WORDS = ("scenario", "default", "candidates")


def parse_leads(spec: str) -> tuple:
    """``--lead``: comma-separated words of LEAD_WORDS or whole numbers of rows >= 1 (ValueError, one line)."""
    items = tuple(s.strip() for s in spec.split(",") if s.strip())
    if not items:
        raise ValueError('"lead" must name at least one lead')
    out = []
    for item in items:
        if item in LEAD_WORDS:
            out.append(item)
        elif item.isdigit() and int(item) >= 1:
            out.append(int(item))
        else:
            raise ValueError(f'"lead" items must be {", ".join(LEAD_WORDS)} or whole numbers >= 1, got {item!r}')
    return tuple(out)


def leads_for(cfg: Config, items: tuple, n_streams: int) -> list[float]:
    """The interleaved leads to run for ``cfg``, in order, each once: ``scenario`` is the config's
    own lead (the scheduler's default without one), ``default`` ceil(2 D_knee), ``candidates``
    every candidate lead of the what-if tool's pick (xsim.moe.lead), a number that many rows."""
    from xsim.moe.lead import candidate_leads
    from xsim.moe.schedule import d_knee, default_lead

    default = float(default_lead(cfg.shape, n_streams))
    out: list[float] = []
    for item in items:
        if item == "scenario":
            new = [default if cfg.lead is None else float(cfg.lead)]
        elif item == "default":
            new = [default]
        elif item == "candidates":
            new = [float(lead) for _, lead in candidate_leads(d_knee(cfg.shape, n_streams))]
        else:
            new = [float(item)]
        out += [x for x in new if x not in out]
    return out


def within_budget(configs, budget_s: float, clock=None):
    """The configs in order, but none started after ``budget_s`` seconds (0: no budget) of ``clock``
    (default time.monotonic); each one skipped is said on a line of its own."""
    import time

    clock = clock or time.monotonic
    t0 = clock()
    for cfg in configs:
        if budget_s > 0 and clock() - t0 > budget_s:
            print(f"{cfg.name}: skipped (time budget)", flush=True)
            continue
        yield cfg
