"""Why the DES is too sensitive to Algorithm 1's lead: the measured lead sweep's per-tile stamps
beside the DES's per-tile times, under the shipped model and the link / compute options.

Input: ``repeats/h200-pcie-host-moe-lead-sweep-0b8db41.jsonl.gz`` (four configs, every candidate lead
and the wave, 20 trials each; kernel records only, so the compute model is the shipped records'
fused-local mainloops, as in ``moe_lead_measured.py``).

1. Per config x lead, per-SM sums (us): measured stamps (a stamp's mean x count / trials / SMs:
   Linear-1 mainloop, its wait, its release, Linear-2 mainloop, its wait) beside the DES's (each
   kind's mainloop and the wait before it, the load gate's share in brackets), spread seed 0.
2. Per variant: the DES's interleaved kernel time at each lead (mean over spread seeds 0-3, the
   report's), its error against the measured median, and the worst-to-best spread of the leads.
3. Per variant, the report's speedups on the shipped records and on those of 44d972a (default leads).

Variants (nothing fitted here): the shipped model; the load gate in mode ``stall`` (a running
mainloop progresses only while the link's backlog is at or below the gate); the per-schedule level
predicted from the tile streams (``--moe-level predicted``: the shared-HBM pre-pass); both.

    PYTHONPATH=. /work/venv/bin/python benchmarks/moe_lead_fidelity.py [--out benchmarks/results] [--quick]

``--quick``: part 2 only (~5 min on 2 shared cores); the full run adds part 1 and part 3 (the report's
speedups on the shipped records and on those of 44d972a under each variant), ~30 min.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from moe_link_cost import des_per_sm, gated, measured_per_sm  # benchmarks/ is the script's folder
from provenance import commit_note

from calibration.records import load_records
from xsim.builders import moe as builder
from xsim.des import simulate as run
from xsim.fileio import atomic_write
from xsim.platform import resolve_platform
from xsim.report import moe as rep
from xsim.scenario import load_scenario

SWEEP = "calibration/records/repeats/h200-pcie-host-moe-lead-sweep-0b8db41.jsonl.gz"
SHIPPED = "calibration/records/h200-pcie-host-moe.jsonl"
CHECK = "calibration/records/repeats/h200-pcie-host-moe-44d972a.jsonl.gz"   # default leads, an independent run
VARIANTS = [("shipped (start gate)", {}, None), ("stall gate", {}, "stall"),
            ("predicted level", rep.PREDICTED_LEVEL, None),
            ("predicted level + stall gate", rep.PREDICTED_LEVEL, "stall")]
STAMPS = ("l1_mainloop", "l1_wait", "signal", "l2_mainloop", "wait")


def sweep_points(rs) -> dict:
    """{config: {(schedule, lead): record}} of the sweep's kernel records."""
    out: dict = {}
    for r in rs.select("moe", "kernel"):
        out.setdefault(r.params["config"], {})[(r.params["schedule"], int(r.params["lead"]))] = r
    return out


def params_of(config: str, schedule: str, lead: int, over: dict) -> dict:
    p = {**load_scenario(config).params, **over, "schedule": schedule}
    return p | ({"lead": float(lead)} if schedule == "interleaved" else {})


def stamp_table(points, platform, mainloops, over, mode) -> list[str]:
    plat = gated(platform, mode)
    lines = ["| config | schedule | lead | measured: kernel | L1 mainloop | L1 wait | L1 release | L2 mainloop | "
             "L2 wait | DES: kernel | L1 mainloop | L1 wait (gate) | L2 mainloop | L2 wait (gate) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for config, m in points.items():
        for (s, lead), r in sorted(m.items()):
            cfg = builder.Config(params_of(config, s, lead, over), plat, mainloops)
            d = des_per_sm(run(cfg.workload(s), engine="fast", trace=False))
            ms = measured_per_sm(r)
            lines.append(f"| {config.removeprefix('moe1-')} | {s} | {lead} | " +
                         " | ".join(f"{ms[k]:.0f}" for k in ("kernel", *STAMPS)) +
                         f" | {d['kernel']:.0f} | {d['l1_mainloop']:.0f} | {d['l1_wait']:.0f} ({d['l1_gate']:.0f}) "
                         f"| {d['l2_mainloop']:.0f} | {d['l2_wait']:.0f} ({d['l2_gate']:.0f}) |")
    return lines


def lead_curves(points, platform, mainloops, over, mode) -> tuple[list[str], dict]:
    """Per config: (leads, measured us, DES us (seed mean)) and the table rows."""
    plat = gated(platform, mode)
    rows, curves = [], {}
    for config, m in points.items():
        leads = sorted(lead for s, lead in m if s == "interleaved")
        meas = np.array([m[("interleaved", lead)].stat("kernel_us", "median") for lead in leads])
        des = np.array([builder.simulate({**params_of(config, "interleaved", lead, over),
                                          "spread_seeds": rep.SPREAD_SEEDS}, plat, "fast", trace=False,
                                         mainloop_records=mainloops)[1]["kernel_us"] for lead in leads])
        curves[config] = (leads, meas, des)
        rows.append(f"| {config.removeprefix('moe1-')} | " + " / ".join(map(str, leads)) + " | " +
                    " / ".join(f"{x:.0f}" for x in meas) + " | " + " / ".join(f"{x:.0f}" for x in des) +
                    " | " + " / ".join(f"{100 * (b / a - 1):+.1f}" for a, b in zip(meas, des)) +
                    f" | {meas.max() / meas.min() - 1:.1%} | {des.max() / des.min() - 1:.1%} |")
    return rows, curves


def catalog_lines(path: str, platform) -> list[str]:
    """The report (rows and summary) on one records file under each variant."""
    rs = load_records([path])
    built = {name: rep.build(rs, gated(platform, mode), paper_des=False, level="predicted" if over else "records")
             for name, over, mode in VARIANTS}
    names = [n for n, _, _ in VARIANTS]
    keys = ("speedup_abs_err_max", "n_speedup_within_0_05", "kernel_time_mape", "geomean_speedup_predicted",
            "selector_worst")
    lines = [f"3. The report on {path}: " + "; ".join(
        f"{n}: " + ", ".join(f"{k} {built[n].summary[k]:.4g}" for k in keys) for n in names),
        "| config | measured | " + " | ".join(names) + " |", "| --- | --- |" + " --- |" * len(names)]
    rows = {n: {r.config: r for r in built[n].rows} for n in names}
    for config, r in sorted(rows[names[0]].items()):
        lines.append(f"| {config.removeprefix('moe1-')} | {r.speedup_measured:.3f} | " + " | ".join(
            f"{rows[n][config].speedup_predicted:.3f} ({rows[n][config].speedup_predicted - r.speedup_measured:+.3f})"
            for n in names) + " |")
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--quick", action="store_true", help="part 2 only")
    args = parser.parse_args()
    platform = resolve_platform("h200-pcie-host")
    mainloops = [r.data for r in load_records([SHIPPED]).select("moe", "mainloop")]
    points = sweep_points(load_records([SWEEP]))
    lines = [f"MoE lead sweep fidelity, {SWEEP} (compute model: {SHIPPED}'s fused-local mainloops; {commit_note()})",
             f"predicted level = {rep.PREDICTED_LEVEL}", ""]
    if not args.quick:
        for name, over, mode in (VARIANTS[0], VARIANTS[3]):
            lines += [f"1. Per-SM sums (us), measured | DES ({name}, spread seed 0)",
                      *stamp_table(points, platform, mainloops, over, mode), ""]
            print("\n".join(lines), flush=True)
    summary = []
    for name, over, mode in VARIANTS:
        rows, curves = lead_curves(points, platform, mainloops, over, mode)
        lines += [f"2. {name}: interleaved kernel us per lead (DES: mean over spread seeds 0-3)",
                  "| config | leads | measured us | DES us | DES error % | measured spread | DES spread |",
                  "| --- | --- | --- | --- | --- | --- | --- |", *rows, ""]
        err = np.concatenate([np.abs(d / m - 1) for _, m, d in curves.values()])
        ratio = [(d.max() / d.min() - 1) / (m.max() / m.min() - 1) for _, m, d in curves.values()]
        summary.append(f"- {name}: per-lead kernel-time error mean {100 * err.mean():.1f} %, worst "
                       f"{100 * err.max():.1f} %; DES spread / measured spread " +
                       " / ".join(f"{x:.2f}" for x in ratio))
        print("\n".join(rows + summary[-1:]), flush=True)
    lines += ["Summary (hunyuan / dit-moe hot / dit-moe zipf / dsv4-flash zipf 4096):", *summary, ""]
    if not args.quick:
        for path in (SHIPPED, CHECK):
            lines += catalog_lines(path, platform)
            print("\n".join(lines[-22:]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / ("moe_lead_fidelity_quick.txt" if args.quick else "moe_lead_fidelity.txt")
    atomic_write(target, "\n".join(lines) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
