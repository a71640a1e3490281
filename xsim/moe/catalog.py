"""The MoE scenario catalogs: the paper's matrix (EP = 8, paper-8gpu) and the one-GPU catalog.

Each entry names a model family (:mod:`xsim.moe.families`), a precision, a routing and the
tokens per rank; :func:`scenario_toml` renders it as a shipped scenario with a source for
every number. The one-GPU catalog was chosen with the what-if tool on the host link
(``benchmarks/moe_catalog.py`` prints each entry's regime and writes the TOML files):
``violated`` (eq. 14 fails even interleaved: the link bounds the kernel), ``satisfied``
(eq. 14 holds interleaved, not with the wave gap) and ``covered`` (negative controls: the
Linear-2 mainloop alone already covers the span).
"""

from __future__ import annotations

from dataclasses import dataclass

from xsim.moe.families import FAMILIES, PAPER_MODELS, PAPER_TOKENS
from xsim.platform import CapacityModel, IssueModel, Platform

HOST_PROFILE = "h200-pcie-host"
ZIPF_SKEW, HOT_SHARE = 1.2, 0.5


def placeholder_host_platform() -> Platform:
    """The host link before its profile was measured: R = 50 GB/s, Q = 1 MiB, T_iss0 = 1 us."""
    return Platform(name=f"{HOST_PROFILE}-placeholder", drain_rate_gbps=50.0, issue=IssueModel(t_fixed_us=1.0),
                    capacity=CapacityModel(max_bytes=float(2**20)), sms=132, gpus=1, status="override",
                    description="placeholder host-link profile (R = 50 GB/s, Q = 1 MiB, T_iss0 = 1 us)")


def host_platform() -> Platform:
    """The shipped h200-pcie-host profile, or the placeholder while it does not exist."""
    from xsim.platform import shipped_platforms

    return shipped_platforms().get(HOST_PROFILE) or placeholder_host_platform()


@dataclass(frozen=True)
class Entry:
    family: str
    precision: str
    routing: str
    tokens: int
    ep: int = 1
    regime: str = ""     # the one-GPU catalog's intended regime (checked by benchmarks/moe_catalog.py)

    @property
    def skew(self) -> float:
        return {"balanced": 0.0, "zipf": ZIPF_SKEW, "hot": HOT_SHARE}[self.routing]

    @property
    def name(self) -> str:
        prefix = "moe1" if self.ep == 1 else f"moe{self.ep}"
        return f"{prefix}-{self.family}-{self.precision}-{self.routing}-{self.tokens}"


ONE_GPU = (
    Entry("qwen3-30b", "bf16", "zipf", 4096, regime="violated"),
    Entry("qwen3-30b", "fp8", "balanced", 4096, regime="violated"),
    Entry("dsv4-flash", "bf16", "zipf", 4096, regime="violated"),
    Entry("glm-5.2", "fp8", "hot", 4096, regime="violated"),
    Entry("mimo-v2.5", "bf16", "balanced", 4096, regime="violated"),
    Entry("hy3", "fp8", "zipf", 4096, regime="violated"),
    Entry("hy3", "bf16", "balanced", 1024, regime="satisfied"),
    Entry("hy3", "bf16", "hot", 1024, regime="satisfied"),
    Entry("mimo-v2.5", "fp8", "hot", 1024, regime="satisfied"),
    Entry("glm-5.2", "fp8", "balanced", 1024, regime="satisfied"),
    Entry("qwen3.5", "bf16", "zipf", 1024, regime="satisfied"),
    Entry("dsv4-flash", "fp8", "balanced", 1024, regime="satisfied"),
    Entry("dit-moe", "bf16", "zipf", 4096, regime="satisfied"),
    Entry("dit-moe", "bf16", "hot", 4096, regime="satisfied"),
    Entry("dsv4-flash", "bf16", "balanced", 1024, regime="covered"),
    Entry("dsv4-flash", "bf16", "zipf", 1024, regime="covered"),
    Entry("dsv4-flash", "bf16", "hot", 1024, regime="covered"),
    Entry("hunyuan-large", "bf16", "balanced", 1024, regime="covered"),
)

PAPER = tuple(Entry(f, prec, routing, PAPER_TOKENS, ep=8)
              for f in PAPER_MODELS for prec, routing in
              (("fp8", "zipf"), ("fp8", "balanced"), ("fp8", "hot"), ("bf16", "zipf"), ("bf16", "balanced")))

# DeepGEMM's MegaMoE tiling on the paper's GPU: block_n = 128 columns of the interleaved
# gate/up output (64 intermediate columns after SwiGLU), 128 hidden columns per Linear-2 tile,
# block_m = 192 for prefill-sized loads (csrc/jit_kernels/heuristics/mega_moe.hpp), TMEM
# double-buffered accumulators (kNumEpilogueStages = 2), a warp-specialized epilogue.
PAPER_TILING = dict(block_m=192, block_n1=64, block_n2=128, staging_depth=2, l1_release="issue")
ONE_GPU_TILING = dict(block_m=128, block_n1=128, block_n2=128, staging_depth=0, l1_release="drain")


def params(entry: Entry, lead: int | None = None) -> dict:
    """The entry's builder params; a one-GPU entry's ``lead`` is ``lead`` if given, else the one its
    shipped scenario file carries (the what-if tool's pick, :func:`shipped_lead`), else the default."""
    f = FAMILIES[entry.family]
    tiling = ONE_GPU_TILING if entry.ep == 1 else PAPER_TILING
    p = {"hidden": f["hidden"], "intermediate": f["intermediate"], "experts": f["experts"], "topk": f["topk"],
         "tokens": entry.tokens, "ep": entry.ep, "precision": entry.precision, **tiling,
         "routing": entry.routing, "skew": entry.skew, "seed": 0, "schedule": "both"}
    lead = lead if lead is not None or entry.ep != 1 else shipped_lead(entry.name)
    if lead is not None:
        p["lead"] = lead
    return p


def shipped_lead(name: str) -> int | None:
    """The ``lead`` of the shipped scenario file ``scenarios/<name>.toml`` (None: none given or no file)."""
    import tomllib
    from importlib import resources

    path = resources.files("scenarios") / f"{name}.toml"
    if not path.is_file():
        return None
    lead = tomllib.loads(path.read_text()).get("params", {}).get("lead")
    return None if lead is None else int(lead)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def scenario_toml(entry: Entry, lead: int | None = None, lead_source: str = "") -> str:
    """The scenario file; a one-GPU entry's ``lead`` (the what-if tool's pick) with ``lead_source``."""
    p = params(entry, lead)
    f = FAMILIES[entry.family]
    one_gpu = entry.ep == 1
    where = ("one H200, Combine over the host link (predict on h200-pcie-host; measured by xsim bench moe)"
             if one_gpu else "the paper's 8-GPU node, EP = 8 (predictions only, platform paper-8gpu)")
    sources = {
        "hidden": f["source"], "intermediate": f["source"], "experts": f["source"], "topk": f["source"],
        "tokens": (f"chosen with the what-if tool on the host link to land in the '{entry.regime}' regime "
                   "(benchmarks/results/moe_catalog.txt)" if one_gpu else
                   "Table 2 caption: 55,808 tokens (taken as tokens per rank, DeepGEMM's num_tokens)"),
        "ep": "one GPU holds every expert" if one_gpu else "Sec. 5.1: eight-way expert parallelism (EP = 8)",
        "precision": ("fp8 = e4m3 weights and activations (W8A8), bf16 out" if entry.precision == "fp8" else
                      "bf16 weights and activations"),
        "block_m": ("the fused Triton kernel's tile (MOE_CONTRACT.md)" if one_gpu else
                    "DeepGEMM MegaMoE heuristics: block_m 192 for prefill-sized loads"),
        "block_n1": ("the fused Triton kernel's tile" if one_gpu else
                     "DeepGEMM block_n 128 over interleaved gate/up = 64 intermediate columns"),
        "block_n2": "128 hidden columns per Linear-2 tile (DeepGEMM block_n; the Triton kernel's tile)",
        "staging_depth": ("the Triton kernel is not warp-specialized: the epilogue's stores sit on the compute "
                          "role (S = 0)" if one_gpu else "DeepGEMM: two TMEM accumulator stages (S = 2)"),
        "l1_release": ("HELPERS.md: a release issued after host stores waits for their drain" if one_gpu else
                       "a warp-specialized epilogue signals l2_full at its issue end"),
        "routing": {"balanced": "every expert the same rows (seeded relabelling)",
                    "zipf": f"seeded Zipf over experts, s = {ZIPF_SKEW} (the paper does not give its skew)",
                    "hot": f"one seeded hot expert in {HOT_SHARE:.0%} of the tokens"}[entry.routing],
        "skew": "see routing", "seed": "routing seed",
        "schedule": "both schedules: expert waves and Algorithm 1 (lead ceil(2 D_knee))",
    }
    if "lead" in p:
        sources["schedule"] = "both schedules: expert waves and Algorithm 1 (its lead: see lead)"
        sources["lead"] = lead_source or "the what-if tool's pick (xsim.moe.lead, benchmarks/moe_catalog.py --write)"
    lines = [f'name = "{entry.name}"', 'builder = "moe"',
             f'description = "MoE layer {entry.family} ({entry.precision}, {entry.routing} routing, '
             f'{entry.tokens} tokens per rank) on {where}."',
             f'platform = "{"h200-pcie-host" if one_gpu else "paper-8gpu"}"', "", "[params]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in p.items()]
    lines += ["", "[sources]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in sources.items()]
    return "\n".join(lines) + "\n"


def shape(entry: Entry):
    """The entry's MoEShape (for the kernel runner: ``MoEShape``, routing kind, skew, seed)."""
    from xsim.moe.shapes import MoEShape

    p = params(entry)
    return MoEShape(**{k: p[k] for k in ("hidden", "intermediate", "experts", "topk", "tokens", "ep", "precision",
                                          "block_m", "block_n1", "block_n2")})


def one_gpu_configs() -> list[tuple[str, object, str, float, int]]:
    """(scenario name, MoEShape, routing, skew, seed) for every one-GPU entry."""
    return [(e.name, shape(e), e.routing, e.skew, 0) for e in ONE_GPU]
