"""Where the host link's cost lands in the fused MoE kernel, measured against the DES, and which link
law predicts the speedups (issue 10: <= 0.05 per config).

1. The link's cost per SM, by stamp: for every config x schedule, the measured host run minus the
   local-Combine control (``kernel`` minus ``kernel_local`` records: each stamp kind's mean x count
   / trials / SMs (both from the record): Linear-1 mainloop, its wait, its release, Linear-2 mainloop, its wait,
   the Combine span) beside the DES over the link minus the DES without it (per-SM sums of each
   tile kind's mainloop and of the wait before it, the load gate's share in brackets), spread seed 0.
2. Variants (builder parameters and the load gate's mode; nothing fitted here): the speedup error
   over the link and locally, the kernel-time MAPE, and the link's own share of the speedup error
   (predicted (host - local) minus measured (host - local) speedup), on the shipped records and,
   as an independent check, on the rerun at 1907a2c (its kernel and kernel_local records; the
   compute model stays the one made from the shipped records' mainloops).

    PYTHONPATH=. /work/venv/bin/python benchmarks/moe_link_cost.py [--out benchmarks/results] [--quick]

``--quick``: part 1 and the seed-0 variants only (~3 min); the full run is ~15 min on 2 shared cores.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
from moe_speedup_error import RECORDS, errors, evaluate, setup  # benchmarks/ is the script's folder
from provenance import commit_note

from calibration.records import load_records
from xsim.builders import moe as builder
from xsim.des import simulate as run
from xsim.fileio import atomic_write
from xsim.load_gate import LoadGate
from xsim.moe.tiles import L1, L2
from xsim.report import moe as rep

RERUN = "calibration/records/repeats/h200-pcie-host-moe-kernels-1907a2c.jsonl.gz"
LEVEL = rep.PREDICTED_LEVEL   # branch moefid's option (xsim report --moe-level predicted)
SEEDS4 = {"spread_seeds": 4}
# the Combine's sustained drain rate over the profile's R: the segment-stride microbenchmark's
# row patterns (repeats/h200-pcie-host-micro-segments-e1cf401.jsonl.gz: 50.97 GB/s, mean of 9) / 52.37
SUSTAINED = 0.973
VARIANTS = [   # (name, builder params, gate mode or None, in --quick)
    ("shipped (start gate), seed 0", {}, None, True),
    ("stall gate, seed 0", {}, "stall", True),
    ("predicted level, seed 0", LEVEL, None, True),
    ("predicted level + stall gate, seed 0", LEVEL, "stall", True),
    ("shipped (start gate), seeds 0-3", SEEDS4, None, False),
    ("stall gate, seeds 0-3", SEEDS4, "stall", False),
    ("predicted level, seeds 0-3", {**SEEDS4, **LEVEL}, None, False),
    ("**predicted level + stall gate**, seeds 0-3", {**SEEDS4, **LEVEL}, "stall", False),
    ("predicted level + stall gate, seeds 1-4", {**SEEDS4, **LEVEL, "spread_seed": 1}, "stall", False),
    ("predicted level + stall gate + sustained drain (combine_rate_scale 0.973), seeds 0-3",
     {**SEEDS4, **LEVEL, "combine_rate_scale": SUSTAINED}, "stall", False),
]
RERUN_VARIANTS = ("shipped (start gate), seeds 0-3", "predicted level, seeds 0-3",
                  "**predicted level + stall gate**, seeds 0-3")
MEASURED_STAMPS = ("l1_mainloop", "l1_wait", "signal", "l2_mainloop", "wait", "span")


class KernelsOf:
    """The shipped records' mainloop records (the compute model) with another run's kernels."""

    def __init__(self, mainloops, kernels):
        self.mainloops, self.kernels = mainloops, kernels

    def select(self, experiment, kind):
        return (self.mainloops if kind == "mainloop" else self.kernels).select(experiment, kind)


def gated(platform, mode):
    g = platform.load_gate
    return platform if mode is None else replace(platform, load_gate=LoadGate(g.threshold_bytes, g.scope, mode))


def measured_per_sm(record) -> dict:
    """Per-SM sums of the stamped times: a stamp's mean x its count over the trials (the kernel
    time's count) and the record's SMs."""
    stats = record.data["stats"]
    per = stats["kernel_us"]["n"] * record.data["platform"]["sms"]
    return {k: stats[f"{k}_us"]["mean"] * stats[f"{k}_us"]["n"] / per if f"{k}_us" in stats else np.nan
            for k in MEASURED_STAMPS} | {"kernel": stats["kernel_us"]["median"]}


def des_per_sm(result) -> dict:
    """Per-SM sums: each kind's mainloop, the wait before it (since the stream's previous issue end)
    and its load-gate share."""
    w, t = result.workload, result.times
    streams = len(w.offsets) - 1
    before = np.zeros(w.n_tiles)
    for p in range(len(w.offsets) - 1):
        lo, hi = w.offsets[p], w.offsets[p + 1]
        before[lo + 1:hi] = t.issue_end[lo:hi - 1]
    out = {"kernel": result.makespan_us}
    for kind, name in ((L1, "l1"), (L2, "l2")):
        s = w.kind == kind
        out[f"{name}_mainloop"] = float((t.mainloop_end - t.mainloop_start)[s].sum() / streams)
        out[f"{name}_wait"] = float((t.mainloop_start - before)[s].sum() / streams)
        out[f"{name}_gate"] = float(np.nansum(t.gate_wait_us[s]) / streams)
    return out


def cost_table(rs, platform, over: dict, mode) -> list[str]:
    mainloops = [r.data for r in rs.select("moe", "mainloop")]
    host = {(r.params["config"], r.params["schedule"]): r for r in rs.select("moe", "kernel")}
    local = {(r.params["config"], r.params["schedule"]): r for r in rs.select("moe", "kernel_local")}
    measured = rep._measured(rs.select("moe", "kernel"))
    lines = ["| config | schedule | measured: kernel | L1 mainloop | L1 wait | L1 release | L2 mainloop | L2 wait | "
             "span | DES: kernel | L1 mainloop | L1 wait (gate) | L2 mainloop | L2 wait (gate) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for config in sorted(measured):
        params = {**rep._params(config, measured[config]), **over}
        for s in rep.SCHEDULES:
            d = {}
            for tag, plat in (("host", gated(platform, mode)), ("local", rep.without_link(platform))):
                cfg = builder.Config({**params, "schedule": s}, plat, mainloops)
                d[tag] = des_per_sm(run(cfg.workload(s), engine="fast", trace=False))
            mh, ml = measured_per_sm(host[(config, s)]), measured_per_sm(local[(config, s)])
            m = {k: mh[k] - ml[k] for k in ("kernel", *MEASURED_STAMPS)}
            e = {k: d["host"][k] - d["local"][k] for k in d["host"]}
            lines.append(f"| {config.removeprefix('moe1-')} | {s} | " + " | ".join(f"{m[k]:.0f}" for k in
                         ("kernel", *MEASURED_STAMPS)) + f" | {e['kernel']:.0f} | {e['l1_mainloop']:.0f} | "
                         f"{e['l1_wait']:.0f} ({e['l1_gate']:.0f}) | {e['l2_mainloop']:.0f} | "
                         f"{e['l2_wait']:.0f} ({e['l2_gate']:.0f}) |")
    return lines


def sp(times) -> float:
    """Speedup of a (wave, interleaved) pair of kernel times."""
    return times[0] / times[1]


def link_errors(rows: dict) -> dict:
    """The link's share of the speedup error: predicted minus measured (host speedup - local speedup)."""
    err = np.array([(sp(r["host"]) - sp(r["local"])) - (sp(r["meas"]) - sp(r["meas_local"])) for r in rows.values()])
    return {"max": float(np.abs(err).max()), "mean": float(np.abs(err).mean()), "within": int((np.abs(err) <= .05).sum())}


def variant_row(name, rows) -> tuple[str, str]:
    h, lo, li = errors(rows, "host", "meas"), errors(rows, "local", "meas_local"), link_errors(rows)
    row = (f"| {name} | {h['max']:.3f} ({h['worst'].removeprefix('moe1-')}) | {h['within']} | {h['mean']:.3f} | "
           f"{h['mape']:.2f} % | {lo['max']:.3f} | {lo['within']} | {lo['mape']:.2f} % | {li['max']:.3f} | "
           f"{li['within']} | {li['mean']:.3f} |")
    per = " ".join(f"{c.removeprefix('moe1-')} {sp(r['host']) - sp(r['meas']):+.3f} "
                   f"({sp(r['host']) - sp(r['local']) - sp(r['meas']) + sp(r['meas_local']):+.3f})"
                   for c, r in rows.items())
    return row, f"- {name}: {per}"


HEADER = ["| variant | host worst (config) | within 0.05 | host mean | kernel_time_mape | local worst | local within "
          "| kernel_time_mape_local | link-share worst | link within 0.05 | link mean |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]


def main() -> None:
    args, rs, platform = setup(__doc__.splitlines()[0])
    lines = [f"MoE link cost and link laws, {RECORDS}, platform h200-pcie-host ({commit_note()})",
             f"predicted level = {LEVEL}", "",
             "1. The link's cost per SM (us), host minus local: measured stamps | the DES (shipped model, seed 0)",
             *cost_table(rs, platform, {}, None), "",
             "The same, the DES with the predicted level and the stall gate (seed 0)",
             *cost_table(rs, platform, LEVEL, "stall"), "",
             "2. Variants, shipped records (below the table: per config the host speedup error, predicted - measured, "
             "and in brackets the link share)",
             *HEADER]
    print("\n".join(lines), flush=True)
    per_config, timing = [], []
    for name, over, mode, quick in VARIANTS:
        if args.quick and not quick:
            continue
        t0 = time.perf_counter()
        row, per = variant_row(name, evaluate(over, mode, rs, platform))
        lines.append(row)
        per_config.append(per)
        timing.append(f"{name}: {time.perf_counter() - t0:.0f} s")
        print(row, flush=True)
    lines += ["", *per_config]
    if not args.quick:
        rerun = KernelsOf(rs, load_records([RERUN]))
        lines += ["", f"Rerun check: {RERUN} (kernel and kernel_local records; the compute model from {RECORDS})",
                  *HEADER]
        rerun_per = []
        for name, over, mode, _ in VARIANTS:
            if name in RERUN_VARIANTS:
                row, per = variant_row(name, evaluate(over, mode, rerun, platform))
                lines.append(row)
                rerun_per.append(per)
                print(row, flush=True)
        lines += ["", *rerun_per]
    lines += ["", "time per variant (shared cores): " + "; ".join(timing)]
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / ("moe_link_cost_quick.txt" if args.quick else "moe_link_cost.txt")
    atomic_write(target, "\n".join(lines) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
