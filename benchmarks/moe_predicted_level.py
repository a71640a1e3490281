"""The per-schedule compute level predicted from the tile streams (``compute = contention``, the
one-shot ``ratio`` anchor, ``inflight`` shares, the spread on the bytes and the ``residual``
spread) against the shipped model, over the host link and in the local-Combine control.

What the variant predicts and what it takes from measurements: each schedule's local run under
one shared HBM (:mod:`xsim.moe.contention`, 3.8 TB/s for every config, chosen on the local
control: the rows at 3.6 and 4.0 TB/s below) gives every tile its mainloop in context; each
kind's mainloops are then scaled by one factor so that their mean over both schedules equals
the layer's fused-local mean (the level the shipped model uses, pooled over the schedules: the
split between the schedules is the pre-pass's); each tile's drawn spread is the measured one
less the pre-pass's own spread in context. No per-schedule measurement and no host-link record
enters it. Rows: ``moe_speedup_error``'s ``evaluate`` and ``errors`` (host: ``kernel`` records;
local: ``kernel_local`` records against the DES without the link), then the mean mainloops per
schedule and kind of the variant's pre-pass against the fused-local records.

    PYTHONPATH=. /work/venv/bin/python benchmarks/moe_predicted_level.py [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from moe_speedup_error import RECORDS, errors, evaluate  # benchmarks/ is the script's folder
from provenance import commit_note

from calibration.records import load_records
from xsim.fileio import atomic_write
from xsim.builders import moe as builder
from xsim.moe.tiles import L1, L2
from xsim.platform import resolve_platform
from xsim.report import moe as rep

LEVEL = rep.PREDICTED_LEVEL   # xsim report --moe-level predicted
SEEDS4 = {"spread_seeds": 4}
VARIANTS = [   # (name, builder params)
    ("shipped: layer pool, spread seeds 0-3", SEEDS4),
    ("shipped, spread seeds 1-4", {**SEEDS4, "spread_seed": 1}),
    ("**predicted level** (3.8 TB/s), spread seeds 0-3", {**SEEDS4, **LEVEL}),
    ("predicted level, spread seeds 1-4", {**SEEDS4, **LEVEL, "spread_seed": 1}),
    ("predicted level at 3.6 TB/s, seeds 0-3", {**SEEDS4, **LEVEL, "hbm_tbps": 3.6}),
    ("predicted level at 4.0 TB/s, seeds 0-3", {**SEEDS4, **LEVEL, "hbm_tbps": 4.0}),
    ("predicted level with the measured spread (contention_cv = measured), seeds 0-3",
     {**SEEDS4, **LEVEL, "contention_cv": "measured"}),
    ("predicted level, measured spread x 0.6 (spread_scale, a sensitivity), seeds 0-3",
     {**SEEDS4, **LEVEL, "contention_cv": "measured", "spread_scale": 0.6}),
]


def level_table(rs, platform) -> list[str]:
    """The variant's pre-pass mean mainloops (us, the wait overhead included as the DES runs them)
    per schedule and kind against the fused-local records', and the wave / interleaved ratios."""
    mainloops = [r.data for r in rs.select("moe", "mainloop")]
    measured = rep._measured(rs.select("moe", "kernel"))
    meas = {}
    for r in mainloops:
        p = r["params"]
        if p.get("source") == "fused-local":
            meas[(p["config"], p["schedule"], p["kind"])] = r["stats"]["mainloop_us"]["mean"]
    lines = ["", "Mean mainloops, us, wave / interleaved, measured (fused-local) | predicted level (spread seed 0); "
             "ratio = wave / interleaved", "| config | L1 measured | L1 predicted | L1 ratio meas / pred | L2 measured "
             "| L2 predicted | L2 ratio meas / pred |", "| --- | --- | --- | --- | --- | --- | --- |"]
    err = {L1: [], L2: []}
    for config in sorted(measured):
        cfg = builder.Config({**rep._params(config, measured[config]), **LEVEL}, rep.without_link(platform), mainloops)
        row = [config.removeprefix("moe1-")]
        for kind, name in ((L1, "l1"), (L2, "l2")):
            pred = {}
            for s in rep.SCHEDULES:
                k = cfg.table(s).tiles[:, 0]
                pred[s] = float(cfg.context_mainloops_us(s)[k == kind].mean() - cfg.wait_overhead_us[name])
            m = {s: meas[(config, s, name)] for s in rep.SCHEDULES}
            rm, rp = m["wave"] / m["interleaved"], pred["wave"] / pred["interleaved"]
            err[kind].append(rp - rm)
            row += [f"{m['wave']:.1f} / {m['interleaved']:.1f}", f"{pred['wave']:.1f} / {pred['interleaved']:.1f}",
                    f"{rm:.3f} / {rp:.3f}"]
        lines.append("| " + " | ".join(row) + " |")
    for kind, name in ((L1, "L1"), (L2, "L2")):
        e = np.array(err[kind])
        lines.append(f"{name} wave / interleaved ratio, predicted - measured: mean abs {np.mean(np.abs(e)):.3f}, "
                     f"max abs {np.max(np.abs(e)):.3f}; same side of 1 where measured is > 3 % off 1: "
                     f"{_same_side(err[kind], kind, meas, measured)}")
    return lines


def _same_side(err, kind, meas, measured) -> str:
    name = "l1" if kind == L1 else "l2"
    hit = n = 0
    for e, config in zip(err, sorted(measured)):
        rm = meas[(config, "wave", name)] / meas[(config, "interleaved", name)]
        if abs(rm - 1) > 0.03:
            n += 1
            hit += int(np.sign(rm + e - 1) == np.sign(rm - 1))
    return f"{hit} of {n}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    rs, platform = load_records([RECORDS]), resolve_platform("h200-pcie-host")
    lines = [f"MoE per-schedule compute level predicted from the tile streams, {RECORDS}, platform h200-pcie-host "
             f"({commit_note()})", f"predicted level = {LEVEL}",
             "host: kernel records; local: kernel_local records against the DES without the link",
             "| variant | host worst (config) | host mean | within 0.05 | kernel_time_mape | local worst (config) "
             "| local mean | local within | kernel_time_mape_local | s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, over in VARIANTS:
        t0 = time.perf_counter()
        rows = evaluate(over, None, rs, platform)
        h, lo = errors(rows, "host", "meas"), errors(rows, "local", "meas_local")
        lines.append(f"| {name} | {h['max']:.3f} ({h['worst'].removeprefix('moe1-')}) | {h['mean']:.3f} | "
                     f"{h['within']} | {h['mape']:.2f} % | {lo['max']:.3f} ({lo['worst'].removeprefix('moe1-')}) | "
                     f"{lo['mean']:.3f} | {lo['within']} | {lo['mape']:.2f} % | {time.perf_counter() - t0:.0f} |")
        print(lines[-1], flush=True)
    lines += level_table(rs, platform)
    print("\n".join(lines[-22:]))
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / "moe_predicted_level.txt"
    atomic_write(target, "\n".join(lines) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
