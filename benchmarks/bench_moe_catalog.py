"""The whole one-GPU MoE catalog x both schedules through the DES (fast engine), on 2 cores.

Each worker process simulates half the scenarios, both schedules each (the selector's
locality replay included), on the host-link profile (the placeholder until h200-pcie-host is
shipped). Reports the wall time of the whole run (goal: <= 10 s on 2 cores), numba's compile
excluded: each worker warms the engine up on a tiny workload first (timed separately).

    PYTHONPATH=. /work/venv/bin/python benchmarks/bench_moe_catalog.py [--jobs 2] [--out benchmarks/results]
        [--load-gate-mode stall]   (what-if: the profile's gate in stall mode; writes bench_moe_catalog_stall.*)
        [--set key=value ... --tag NAME]   (builder parameters for every scenario, e.g. an optional compute
                                            model; writes bench_moe_catalog_NAME.*)
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from provenance import commit_note  # benchmarks/ is the script's folder

from xsim.builders import moe
from xsim.moe import catalog
from xsim.params import resolve


def _platform(mode: str | None):
    platform = catalog.host_platform()
    return platform.with_overrides(load_gate_mode=mode) if mode else platform


def _warm(mode: str | None, over: dict) -> float:
    t0 = time.perf_counter()
    entry = catalog.ONE_GPU[0]
    params = resolve(moe.PARAMS, {**catalog.params(entry), "tokens": 64, "experts": 8, "topk": 2, **over}, "warm-up")
    moe.simulate(params, _platform(mode), "fast", trace=False)
    return time.perf_counter() - t0


def _run(names: list[str], mode: str | None, over: dict) -> list[dict]:
    platform = _platform(mode)
    entries = {e.name: e for e in catalog.ONE_GPU}
    out = []
    for name in names:
        t0 = time.perf_counter()
        params = resolve(moe.PARAMS, {**catalog.params(entries[name]), **over}, name)
        _, s = moe.simulate(params, platform, "fast", trace=False)
        out.append({"name": name, "seconds": time.perf_counter() - t0, "speedup": s["speedup"],
                    "wave_us": s["wave"]["kernel_us"], "int_us": s["interleaved"]["kernel_us"],
                    "pick": s["selector"]["schedule"]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--load-gate-mode", choices=("start", "stall"), default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a builder parameter")
    parser.add_argument("--tag", default="", help="output name suffix (with --set)")
    args = parser.parse_args()
    mode = args.load_gate_mode
    over = dict(item.split("=", 1) for item in args.set)
    names = [e.name for e in catalog.ONE_GPU]
    chunks = [names[i::args.jobs] for i in range(args.jobs)]
    with ProcessPoolExecutor(args.jobs) as pool:
        warm = [f.result() for f in [pool.submit(_warm, mode, over) for _ in range(args.jobs)]]
        t0 = time.perf_counter()
        rows = [r for part in pool.map(_run, chunks, [mode] * len(chunks), [over] * len(chunks)) for r in part]
        wall = time.perf_counter() - t0
    platform = catalog.host_platform().name + (f", load gate mode {mode}" if mode else "")
    platform += f", {' '.join(args.set)}" if args.set else ""
    lines = [f"one-GPU MoE catalog x both schedules, fast engine, {args.jobs} workers on {os.cpu_count()} cores, "
             f"platform {platform} ({commit_note()})",
             f"{len(rows)} scenarios x 2 schedules (+ selector): {wall:.2f} s wall "
             f"(goal <= 10 s: {'met' if wall <= 10 else 'NOT met'}); numba warm-up per worker "
             f"{', '.join(f'{w:.1f}' for w in warm)} s, not counted",
             f"load average at the end (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())} "
             "(the machine is shared)",
             f"{'scenario':42s} {'s':>5s} {'wave us':>8s} {'int us':>8s} {'speedup':>7s} pick"]
    lines += [f"{r['name']:42s} {r['seconds']:5.2f} {r['wave_us']:8.0f} {r['int_us']:8.0f} {r['speedup']:7.3f} "
              f"{r['pick']}" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "bench_moe_catalog" + (f"_{mode}" if mode else "") + (f"_{args.tag}" if args.tag else "")
    (args.out / f"{stem}.txt").write_text(text)
    (args.out / f"{stem}.json").write_text(json.dumps(
        {"wall_s": wall, "jobs": args.jobs, "warmup_s": warm, "platform": platform, "commit": commit_note(),
         "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
