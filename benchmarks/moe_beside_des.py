"""The DES on the beside tables: does the calibrated load gate predict how much longer a MoE mainloop runs
beside host stores (``hwkernels.moe_beside`` records)?

Per measured point (config, own j or beside n) the same tile table runs in the DES twice, with the
platform's link and without it (``xsim.builders.moe.without_link``, the local control). Every tile's
mainloop is the point's own local control's mean time held before and in a mainloop of its kind (its
wait, which with the counters ready is the l2_full poll, a load, and its mainloop) times a spread factor
drawn from the control's own p10-p90 (so the storers fall out of step as on the GPU); the l2_full
counters are ready as in the kernel (``FusedMoE(ready=True)``); the epilogues are the control's. The
control is the input, the link's cost is the prediction. A tile's predicted time is its wait at the
load gate plus its mainloop; the measured one is its wait plus its mainloop (the loads behind the
stores are the poll's and the mainloop's). Printed: host / local of that mean per kind, and of the
kernel time (measured: CUDA-event medians; DES: makespans), measured beside the DES with the profile's
gate as calibrated (``start``: a mainloop waits before it starts) and in ``stall`` mode (also paused
while it runs). Nothing is fitted here: the profile is the one the microbenchmarks calibrated.

    PYTHONPATH=. python benchmarks/moe_beside_des.py [--platform NAME] [RECORDS.jsonl ...]
writes benchmarks/results/moe_beside_des_<platform>.txt.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from moe_beside import HINT, _med, parse, points  # noqa: E402  benchmarks/ is the script's folder
from provenance import commit_note  # noqa: E402

from hwkernels.moe_beside import BESIDE, OWN, beside_table, configs_named, flop_ratio  # noqa: E402
from xsim.builders.moe import without_link  # noqa: E402
from xsim.des import simulate  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402
from xsim.moe.des_workload import tile_workload  # noqa: E402
from xsim.moe.layout import expert_layout  # noqa: E402
from xsim.moe.routing import route  # noqa: E402
from xsim.moe.schedule import schedule_table  # noqa: E402
from xsim.moe.tiles import L1, L2  # noqa: E402
from xsim.spread import spread_cv, tile_factors  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODES = ("start", "stall")
KINDS = ("l1", "l2", "kernel")


def simulate_table(table, shape, lay, platform, local: dict, cv: dict, seed: int, trace: bool = False):
    """(workload, result) of the table in the DES on ``platform``, each tile's mainloop its kind's time in
    ``local`` times its spread factor (``cv`` by kind, :mod:`xsim.spread`); ``trace``: keep q(t)."""
    factor = tile_factors(table.tiles, {L1: cv["l1"], L2: cv["l2"]}, seed)
    w = tile_workload(table, shape, lay, platform, local["l1"], local["l2"], 0, "issue",
                      local["l2_epilogue"], local["l1_epilogue"], 0.0, factor)
    w = replace(w, wait_counter=np.full(w.n_tiles, -1, np.int64))   # ready=True: no l2_full wait
    return w, simulate(w, engine="fast", trace=trace)


def simulated_mainloops(table, shape, lay, platform, local: dict, cv: dict, seed: int) -> dict:
    """{"l1", "l2": mean of gate wait + mainloop; "kernel": makespan} of ``simulate_table``."""
    w, result = simulate_table(table, shape, lay, platform, local, cv, seed)
    t = result.times
    held = t.gate_wait_us + (t.mainloop_end - t.mainloop_start)
    out = {k: float(np.mean(held[w.kind == kind])) if np.any(w.kind == kind) else math.nan
           for k, kind in (("l1", L1), ("l2", L2))}
    return out | {"kernel": float(result.makespan_us)}


def point_inputs(cfg, pattern: str, k: int, loc: dict, sms: int):
    """(table, layout, local, cv) of one beside point: its table, and its local control's per-kind held
    time and epilogues (``local``) and mainloop spreads (``cv``), the DES's inputs."""
    local = {"l1": _held(loc, "l1"), "l2": _held(loc, "l2"),
             "l1_epilogue": _mean(loc, "l1_epilogue_us"), "l2_epilogue": _mean(loc, "l2_epilogue_us")}
    local = {n: (0.0 if math.isnan(v) else v) for n, v in local.items()}
    cv = {kind: _cv(loc, f"{kind}_mainloop_us") for kind in ("l1", "l2")}
    s = cfg.shape
    lay = expert_layout(s, route(s, cfg.routing, cfg.skew, cfg.seed))
    table = beside_table(schedule_table(s, lay, "wave", n_streams=sms), pattern, k, sms, flop_ratio(s))
    return table, lay, local, cv


def measured_load(host: dict, platform) -> float:
    """A host run's stored bytes over its store window, as a share of R."""
    window = _med(host, "store_window_us")
    return host["params"]["l2_bytes"] / (window * 1e3) / platform.drain_rate_gbps if window > 0 else math.nan


def row(name: str, cfg, pattern: str, k: int, by: dict, platform, sms: int, seeds: int) -> dict:
    """One point's measured and simulated ratios; ``name`` is its point's (the config's, or name@hint)."""
    host, loc = by["host"], by["local"]
    table, lay, local, cv = point_inputs(cfg, pattern, k, loc, sms)
    s = cfg.shape
    out = {"config": name, "pattern": pattern, "k": k, "l2_local_us": _held(loc, "l2")}
    for kind in ("l1", "l2"):
        h, lo = _held(host, kind), _held(loc, kind)
        out[f"{kind}_measured"] = h / lo if lo > 0 else math.nan
        out[f"{kind}_excess_measured"] = h - lo
    out["load"] = measured_load(host, platform)
    out["kernel_measured"] = _med(host, "kernel_us") / _med(loc, "kernel_us")
    ratios, excess = {mode: [] for mode in MODES}, {mode: [] for mode in MODES}
    for seed in range(seeds):
        base = simulated_mainloops(table, s, lay, without_link(platform), local, cv, seed)
        for mode in MODES:
            sim = simulated_mainloops(table, s, lay, platform.with_overrides(load_gate_mode=mode), local, cv, seed)
            ratios[mode].append([sim[k] / base[k] if base[k] > 0 else math.nan for k in KINDS])
            excess[mode].append(sim["l2"] - base["l2"])
    for mode in MODES:
        out[f"l2_excess_{mode}"] = float(np.mean(excess[mode]))
        for kind, r in zip(KINDS, np.mean(ratios[mode], axis=0)):
            out[f"{kind}_{mode}"] = float(r)
    return out


def _mean(rec: dict, name: str) -> float:
    return float(((rec.get("stats") or {}).get(name) or {}).get("mean", math.nan))


def _held(rec: dict, kind: str) -> float:
    """A tile's mean time from its program's previous tile to its mainloop's end: the wait (with the
    counters ready, the l2_full poll: a load, held behind the stores like the mainloop's) and the mainloop."""
    return _mean(rec, "l1_wait_us" if kind == "l1" else "wait_us") + _mean(rec, f"{kind}_mainloop_us")


def _cv(rec: dict, name: str) -> float:
    """The spread of a record's samples (xsim.spread.spread_cv of p10, p90, mean; 0 without them)."""
    st = (rec.get("stats") or {}).get(name)
    return spread_cv(st["p10"], st["p90"], st["mean"]) if st and st.get("mean", 0) > 0 else 0.0


BELOW = (0.2, 0.55)   # loads (share of R) below the link's saturation, where the gate should add ~nothing


def below_saturation(rs: list[dict], configs: dict) -> list[str]:
    """Per layer, the shape beside the mean extra time per L2 tile at loads in BELOW: what a law for the
    stretch the gate misses would be fitted on (measured, and the start gate's, per pattern)."""
    out = [f"Below saturation (load {BELOW[0]}-{BELOW[1]} of R): mean L2 +us per tile, measured / DES start "
           "(points, load range), by pattern", "",
           "| config | hidden | K | experts | topk | tokens per expert | precision | L2 local us | own | beside |",
           "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]
    for name in sorted({r["config"] for r in rs}):
        s, mine = configs[name].shape, [r for r in rs if r["config"] == name]
        cells = []
        for pattern in (OWN, BESIDE):
            sel = [r for r in mine if r["pattern"] == pattern and BELOW[0] <= r["load"] <= BELOW[1]]
            cells.append(f"{np.mean([r['l2_excess_measured'] for r in sel]):.1f} / "
                         f"{np.mean([r['l2_excess_start'] for r in sel]):.1f} ({len(sel)}; "
                         f"{min(r['load'] for r in sel):.2f}-{max(r['load'] for r in sel):.2f})" if sel else "-")
        local = np.median([r["l2_local_us"] for r in mine])
        out.append(f"| {name} | {s.hidden} | {s.intermediate} | {s.experts} | {s.topk} | "
                   f"{s.tokens * s.topk // s.experts} | {s.precision} | {local:.1f} | {cells[0]} | {cells[1]} |")
    return out


def table_lines(rs: list[dict]) -> list[str]:
    head = " | ".join(f"{k} {m}" for k in ("L2", "L1", "kernel") for m in ("measured", "DES start", "DES stall"))
    lines = [f"| config | pattern | k | load | L2 +us measured / DES start / stall | {head} |",
             "| --- | --- | ---: | ---: | ---: |" + " ---: |" * 9]
    for r in rs:
        lines.append(f"| {r['config']} | {r['pattern']} | {r['k']} | {r['load']:.2f} | "
                     + " / ".join(f"{r[f'l2_excess_{m}']:.1f}" for m in ("measured", *MODES)) + " | " + " | ".join(
                         f"{r[f'{kind}_{m}']:.3f}" for kind in ("l2", "l1", "kernel") for m in ("measured", *MODES))
                     + " |")
    return lines


def errors(rs: list[dict]) -> list[str]:
    out = []
    for kind, name in (("l2", "L2 mainloop"), ("kernel", "kernel time")):
        for mode in MODES:
            err = np.array([r[f"{kind}_{mode}"] - r[f"{kind}_measured"] for r in rs])
            err = err[np.isfinite(err)]
            worst = err[np.argmax(np.abs(err))]
            out.append(f"{name} host/local, DES {mode} gate minus measured over {len(err)} points: mean "
                       f"{err.mean():+.3f}, mean |err| {np.abs(err).mean():.3f}, worst {worst:+.3f}")
    out += ["", "Per config, DES minus measured: mean |err| (worst) of the L2 host/local ratio and of the L2 excess "
            "(us per tile), with the gate in start and in stall mode", "", "| config | points | L2 ratio, start | L2 ratio, stall | L2 +us, start | L2 +us, stall |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for config in sorted({r["config"] for r in rs}):
        mine = [r for r in rs if r["config"] == config]
        cells = []
        for what, measured in (("l2_{}", "l2_measured"), ("l2_excess_{}", "l2_excess_measured")):
            for mode in MODES:
                err = np.array([r[what.format(mode)] - r[measured] for r in mine])
                worst = err[np.argmax(np.abs(err))]
                cells.append(f"{np.abs(err).mean():.3f} ({worst:+.3f})" if what == "l2_{}" else
                             f"{np.abs(err).mean():.1f} ({worst:+.1f})")
        out.append(f"| {config} | {len(mine)} | " + " | ".join(cells) + " |")
    return out


def main(argv=None) -> int:
    def seeds(ap):
        ap.add_argument("--seeds", type=int, default=2, help="spread seeds 0..N-1, ratios averaged")

    parsed = parse("moe_beside_des", __doc__, argv, seeds)
    if parsed is None:
        return 2
    args, platform, recs, paths = parsed
    if args.seeds < 1:
        print("moe_beside_des: --seeds must be >= 1", file=sys.stderr)
        return 2
    pts = {key: by for key, by in points(recs).items() if {"host", "local"} <= set(by)}
    names = sorted({key[0] for key in pts})
    configs = dict(zip(names, configs_named([n.split(HINT)[0] for n in names])))
    rs = []
    for (name, pattern, k), by in sorted(pts.items()):
        sms = int(by["host"]["params"]["programs"])
        if pattern == BESIDE and not 1 <= k < sms:
            continue
        rs.append(row(name, configs[name], pattern, k, by, platform, sms, args.seeds))
    commits = sorted({r.get("commit", "?") for r in recs})
    gate = platform.load_gate
    lines = [f"The DES on the beside tables, {args.platform} (gate: {gate.scope} scope, {gate.threshold_bytes:.0f} B; "
             f"records of {', '.join(commits)}: {', '.join(p.name for p in paths)}); {commit_note()}",
             "load: bytes over the store window over R; L2 +us: host - local mean wait + mainloop per L2 tile; "
             "host / local: that mean per kind (DES: gate wait + mainloop), and the kernel time; simulated from the "
             "local control's means, each tile's mainloop spread by the control's own p10-p90 "
             f"(spread seeds 0-{args.seeds - 1}, ratios "
             "averaged)", "", *table_lines(rs), "", *errors(rs), "", *below_saturation(rs, configs)]
    out = ROOT / "benchmarks" / "results" / f"moe_beside_des_{args.platform}.txt"
    atomic_write(out, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
