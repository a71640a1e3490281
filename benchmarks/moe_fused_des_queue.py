"""The X-Stage's occupancy over the fused MoE kernel's run: the DES's q(t) beside the one rebuilt from the kernel's
own stamps (``hwkernels.moe_bench --traces``), per traced config and schedule, with the load gate in each mode.

The rebuilt q(t) is ``xsim.moe.traces.link_queue``: every L2 tile's Combine bytes enter over its store span and
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

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from xsim.builders.moe import without_link  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402
from xsim.moe.traces import host_points, merged, rebuilt, simulated, waits  # noqa: E402
from xsim.platform import ProfileError, resolve_platform  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODES = ("start", "stall")
COLUMNS = (("q_mean", "{:.0f}", 1024), ("above", "{:.2f}", 1), ("q_max", "{:.2f}", 2**20), ("idle", "{:.2f}", 1),
           ("l2_idle", "{:.1f}", 1), ("dep", "{:.0f}", 1))


def wait_line(key: str, arrays: dict) -> str | None:
    if f"{key}|local|stamps" not in arrays:
        return None
    (h1, h2, _), (c1, c2, _) = (waits(arrays[f"{key}|{d}|stamps"], arrays[f"{key}|tiles"]) for d in ("host", "local"))
    cell = lambda a, b: f"{np.median(a):.1f} / {np.median(b):.1f} | {np.percentile(a, 90):.1f} / {np.percentile(b, 90):.1f}"  # noqa: E731
    return f"| {key.replace('|', ' | ')} | {cell(h1, c1)} | {cell(h2, c2)} |"


def point(key: str, arrays: dict, platform, measured: dict, mainloops: list) -> list[tuple[str, dict]]:
    """One traced point's rows: the rebuilt queue, then the DES in each gate mode."""
    from xsim.report import moe as report
    from xsim.report.moe_traces import simulate_traced

    name, label = key.split("|")
    params = report._params(name, measured[name]) | report.PREDICTED_LEVEL | {"spread_seeds": 1, "spread_seed": 0}
    schedule = "wave" if label == "wave" else "interleaved"
    gate = platform.load_gate.threshold_bytes
    tiles = arrays[f"{key}|tiles"]
    programs = len(arrays[f"{key}|offsets"]) - 1
    host = arrays[f"{key}|host|stamps"]
    rows = [("rebuilt", rebuilt(host, arrays[f"{key}|store_bytes"], platform.drain_rate_gbps, gate, tiles[:, 0])
             | {"dep": float(waits(host, tiles)[2].sum()) / programs})]
    if f"{key}|local|stamps" in arrays:
        local = arrays[f"{key}|local|stamps"]
        rows.append(("measured, local", {"span_us": float(local[:, 5].max() - local[:, 0].min()) / 1e3,
                                         "dep": float(waits(local, tiles)[2].sum()) / programs}))
    for mode in (*MODES, "no link"):
        plat = without_link(platform) if mode == "no link" else platform.with_overrides(load_gate_mode=mode)
        result = simulate_traced(params, plat, mainloops, schedule, tiles)
        if result is None:
            raise ValueError(f"{key}: the DES's table is not the traced one")
        l2 = tiles[:, 0] == 1
        dep = float(np.nansum(result.times.dep_wait_us[l2])) / programs
        rows.append(("DES, no link" if mode == "no link" else f"DES, gate {mode}",
                     {"span_us": result.makespan_us, "dep": dep} if mode == "no link"
                     else simulated(result, gate, l2) | {"dep": dep}))
    return rows


def lines(key: str, rows: list[tuple[str, dict]]) -> list[str]:
    name, label = key.split("|")
    return [f"| {name} | {label} | {who} | {r['span_us']:.0f} | " + " | ".join(
        "-" if k not in r else f.format(r[k] / div) for k, f, div in COLUMNS) + " |" for who, r in rows]


def summary(points: dict) -> list[str]:
    """Over every traced point, each gate mode's DES against the rebuilt stage; then per config traced in both
    schedules, the speedup (wave span / interleaved span) rebuilt and simulated on the very tables."""
    out = ["| DES | points | span error mean / mean abs / max abs | above-gate share minus rebuilt: mean / mean abs "
           "| q mean / rebuilt (rebuilt > 20 KiB): median, range | q max / rebuilt: median |",
           "| --- | ---: | --- | --- | --- | --- |"]
    for mode in MODES:
        got = [(dict(rows)["rebuilt"], dict(rows)[f"DES, gate {mode}"]) for rows in points.values()]
        span = np.array([d["span_us"] / b["span_us"] - 1 for b, d in got])
        above = np.array([d["above"] - b["above"] for b, d in got])
        q = np.array([d["q_mean"] / b["q_mean"] for b, d in got if b["q_mean"] > 20 * 1024])
        qmax = np.array([d["q_max"] / b["q_max"] for b, d in got if b["q_max"] > 0])
        q_cell = f"{np.median(q):.2f}, {q.min():.2f}-{q.max():.2f}" if q.size else "-"
        out.append(f"| gate {mode} | {len(got)} | {span.mean():+.3f} / {np.abs(span).mean():.3f} / "
                   f"{np.abs(span).max():.3f} | {above.mean():+.3f} / {np.abs(above).mean():.3f} | {q_cell} | "
                   f"{np.median(qmax) if qmax.size else float('nan'):.2f} |")
    out += ["", "| config | speedup, rebuilt spans | DES gate start (minus rebuilt) | DES gate stall (minus rebuilt) |",
            "| --- | ---: | ---: | ---: |"]
    configs = sorted({k.split("|")[0] for k in points})
    for config in configs:
        both = {("wave" if k.endswith("|wave") else "int"): dict(v) for k, v in points.items()
                if k.split("|")[0] == config}
        if set(both) != {"wave", "int"}:
            continue
        speed = {who: both["wave"][who]["span_us"] / both["int"][who]["span_us"]
                 for who in ("rebuilt", *(f"DES, gate {m}" for m in MODES))}
        out.append(f"| {config} | {speed['rebuilt']:.3f} | " + " | ".join(
            f"{speed[f'DES, gate {m}']:.3f} ({speed[f'DES, gate {m}'] - speed['rebuilt']:+.3f})" for m in MODES) + " |")
    return out


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
        keys = host_points(arrays)
        points = {key: point(key, arrays, platform, measured, mainloops) for key in keys
                  if key.split("|")[0] in measured}
        body = [line for key, rows in points.items() for line in lines(key, rows)]
        pre = [line for key in keys if (line := wait_line(key, arrays))]
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
        "span with q over the gate; q max (MiB); idle: share of the span with the link idle (rebuilt: draining under "
        "half of R in a 100 ns bin; DES: q empty); L2 while idle: L2 mainloops running then, on average; L2 dep: "
        "the L2 tiles' wait for their m-block's last L1 tile, us per program (measured: from the tile's start to "
        "that tile's end; DES: its dependency wait)", "",
        "| config | schedule | run | span us | q mean KiB | above | q max MiB | idle | L2 while idle | L2 dep us |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", *body,
        "", "Waits before a mainloop, host / local (us): an L1 tile's start to its mainloop (small loads); an L2 "
        "tile's wait after its m-block's last L1 tile ended (the l2_full poll once its dependency is met)", "",
        "| config | schedule | L1 pre median | L1 pre p90 | L2 after release median | L2 after release p90 |",
        "| --- | --- | ---: | ---: | ---: | ---: |", *pre,
        "", "Over every traced point: the DES's stage against the rebuilt one, and the speedups on the very tables "
        "(spans from the first tile's start to the last tile's end; one spread seed)", "", *summary(points)]) + "\n"
    print(text, end="")
    atomic_write(ROOT / "benchmarks" / "results" / f"moe_fused_des_queue_{args.platform}.txt", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
