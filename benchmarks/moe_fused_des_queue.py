"""The X-Stage's occupancy over the fused MoE kernel's run: the DES's q(t) beside the one rebuilt from the kernel's
own stamps (``hwkernels.moe_bench --traces``), per traced config and schedule, with the load gate in each mode.

The rebuilt q(t) is ``moe_beside_traces.link_queue``: every L2 tile's Combine bytes enter over its store span and
drain at the profile's R. The DES runs the very table the kernel ran (checked tile for tile) as the report
predicts it (``xsim.report.moe``: the predicted level, spread seed 0), once with the profile's gate as calibrated
(mode start) and once in mode stall (same threshold). Per point: the span from the first tile's start to the last
tile's end, the time-weighted mean of q, the share of that span with q above the gate's threshold, and q's
maximum. Nothing is fitted; the traces are the validation run's, never a calibration input.

    PYTHONPATH=. python benchmarks/moe_fused_des_queue.py [--platform NAME] HOST.npz LOCAL.npz ...
writes benchmarks/results/moe_fused_des_queue_<platform>.txt.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from moe_beside_traces import DT_NS, link_queue, merged  # noqa: E402  benchmarks/ is the script's folder
from provenance import commit_note  # noqa: E402

from xsim.fileio import atomic_write  # noqa: E402
from xsim.platform import ProfileError, resolve_platform  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODES = ("start", "stall")


def rebuilt(stamps: np.ndarray, store_bytes: np.ndarray, rate: float, gate: float) -> dict:
    held, _, t0 = link_queue(stamps, store_bytes, rate)
    span_ns = float(stamps[:, 5].max() - stamps[:, 0].min())
    inside = held[: int(np.ceil(span_ns / DT_NS))]                # the kernel's span, not the drain after it
    return {"span_us": span_ns / 1e3, "q_mean": float(inside.mean()), "above": float(np.mean(inside > gate)),
            "q_max": float(held.max())}


def simulated(result, gate: float) -> dict:
    """The same numbers from a DES result with its q(t) breakpoints (linear between them)."""
    t, q = (np.asarray(a, dtype=float) for a in result.traces[0][:2])
    span = float(result.makespan_us)
    keep = t <= span
    t, q = np.append(t[keep], span), np.append(q[keep], np.interp(span, t, q))
    dt, mid = np.diff(t), (q[:-1] + q[1:]) / 2
    return {"span_us": span, "q_mean": float(np.sum(dt * mid) / span),
            "above": float(np.sum(dt * ((q[:-1] > gate) | (q[1:] > gate))) / span), "q_max": float(q.max())}


def point(key: str, arrays: dict, platform, measured: dict, mainloops: list) -> list[str]:
    """One traced point's rows: the rebuilt queue, then the DES in each gate mode."""
    from xsim.builders import moe as builder
    from xsim.des import simulate
    from xsim.report import moe as report

    name, label = key.split("|")
    params = report._params(name, measured[name]) | report.PREDICTED_LEVEL | {"spread_seeds": 1, "spread_seed": 0}
    schedule = "wave" if label == "wave" else "interleaved"
    gate = platform.load_gate.threshold_bytes
    rows = [("rebuilt", rebuilt(arrays[f"{key}|host|stamps"], arrays[f"{key}|store_bytes"],
                                platform.drain_rate_gbps, gate))]
    for mode in MODES:
        cfg = builder.Config(params, platform.with_overrides(load_gate_mode=mode), mainloops)
        table = cfg.table(schedule)
        if not np.array_equal(table.tiles, arrays[f"{key}|tiles"]):
            raise ValueError(f"{key}: the DES's table is not the traced one")
        rows.append((f"DES, gate {mode}", simulated(simulate(cfg.workload(schedule, table), engine="fast", trace=True),
                                                    gate)))
    return [f"| {name} | {label} | {who} | {r['span_us']:.0f} | {r['q_mean'] / 1024:.0f} | {r['above']:.2f} | "
            f"{r['q_max'] / 2**20:.2f} |" for who, r in rows]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="moe_fused_des_queue", description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--platform", default="h100-pcie-host")
    args = ap.parse_args(argv)
    try:
        from calibration.records import load_shipped_records
        from xsim.report import moe as report

        platform = resolve_platform(args.platform)
        if platform.load_gate is None:
            raise ValueError(f"{args.platform} has no load gate")
        arrays = merged([np.load(p) for p in args.traces])
        rs = load_shipped_records(platform=platform.name)
        if rs is None:
            raise ValueError(f"no shipped records for {args.platform}")
        measured, mainloops = report._measured(rs.select("moe", "kernel")), [r.data for r in rs.select("moe", "mainloop")]
        keys = sorted(k.rsplit("|", 2)[0] for k in arrays if k.endswith("|host|stamps"))
        body = [line for key in keys if key.split("|")[0] in measured
                for line in point(key, arrays, platform, measured, mainloops)]
    except (ProfileError, OSError, ValueError) as e:
        print(f"moe_fused_des_queue: {e}", file=sys.stderr)
        return 2
    if not body:
        print("moe_fused_des_queue: no traced host run of a config the shipped records measured", file=sys.stderr)
        return 2
    gate = platform.load_gate
    text = "\n".join([
        f"The X-Stage over the fused MoE kernel: the DES beside the queue rebuilt from the kernel's stamps, "
        f"{args.platform} (R = {platform.drain_rate_gbps:.1f} GB/s, load gate {gate.threshold_bytes / 1024:.0f} KiB, "
        f"{gate.scope} scope; traces {', '.join(p.name for p in args.traces)}); {commit_note()}",
        "span: first tile start to last tile end (us); q mean (KiB, time-weighted over the span); above: share of the "
        "span with q over the gate; q max (MiB)", "",
        "| config | schedule | queue | span us | q mean KiB | above | q max MiB |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |", *body]) + "\n"
    print(text, end="")
    atomic_write(ROOT / "benchmarks" / "results" / f"moe_fused_des_queue_{args.platform}.txt", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
