"""A 168-point microbenchmark sweep (14 gaps x 12 burst sizes) through `xsim sweep`, and its memory.

Runs the CLI in a fresh process (as a user would), with ``--jobs`` workers, and reports the
wall time (goal: <= 10 s on 2 cores) and the peak resident memory of the parent and of the
largest worker. Then the same sweep at 4x the points (672) to show memory stays flat: rows
are streamed to disk, no trace is kept. Not a test: run it, read it, commit the output.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_sweep.py [--jobs 2] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from provenance import commit_note  # benchmarks/ is the script's folder

GRID_168 = ["--grid", "gap_us=0:6.5:0.5", "--grid", "burst_bytes=4KB:48KB:4KB"]            # 14 x 12
GRID_672 = ["--grid", "gap_us=0:6.5:0.5", "--grid", "burst_bytes=1KB:48KB:1KB"]            # 14 x 48

CHILD = """
import json, resource, sys, time
from xsim.cli import main
t0 = time.perf_counter()
code = main(sys.argv[1:])
wall = time.perf_counter() - t0
kib = lambda who: resource.getrusage(who).ru_maxrss
print(json.dumps({"code": code, "wall_s": wall, "parent_peak_rss_mib": kib(resource.RUSAGE_SELF) / 1024,
                  "worker_peak_rss_mib": kib(resource.RUSAGE_CHILDREN) / 1024}), file=sys.stderr)
"""


def run_sweep(grid: list[str], jobs: int, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as out:
        argv = ["sweep", "periodic", *grid, *extra, "--jobs", str(jobs), "--out", out, "--json", "--no-plots"]
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": os.getcwd()})
        total = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        stats = json.loads(proc.stderr.strip().splitlines()[-1])
        rows = sum(1 for _ in open(Path(out) / "rows.jsonl"))
    return {"argv": argv, "rows": rows, "process_wall_s": total, **stats, "document": json.loads(proc.stdout)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--set", action="append", default=[], help="extra --set for the scenario")
    parser.add_argument("--tag", default="", help="suffix of the output files (bench_sweep<tag>.txt)")
    args = parser.parse_args()
    extra = [x for s in args.set for x in ("--set", s)]

    small = run_sweep(GRID_168, args.jobs, extra)
    large = run_sweep(GRID_672, args.jobs, extra)
    result = {"jobs": args.jobs, "cores": os.cpu_count(), "sets": args.set, "commit": commit_note(),
              "load_average_1_5_15": os.getloadavg(),
              "sweep_168": small, "sweep_672": large}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"bench_sweep{args.tag}.json").write_text(json.dumps(result, indent=2) + "\n")
    platform = small["document"]["platform"]
    lines = [
        f"xsim sweep periodic {' '.join(extra)} (platform {platform}, engine fast, --jobs {args.jobs}, "
        f"{os.cpu_count()} cores; {result['commit']})",
        f"168 points (14 gaps x 12 burst sizes): {small['wall_s']:.2f} s in main(), "
        f"{small['process_wall_s']:.2f} s for the whole process (goal <= 10 s: "
        f"{'met' if small['process_wall_s'] <= 10 else 'NOT met'})",
        f"672 points (14 gaps x 48 burst sizes): {large['wall_s']:.2f} s in main(), "
        f"{large['process_wall_s']:.2f} s for the whole process",
        f"load average at the end (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in result['load_average_1_5_15'])}"
        " (the machine is shared; other processes compete for its 2 cores)",
        f"peak RSS, parent: {small['parent_peak_rss_mib']:.0f} MiB at 168 points, "
        f"{large['parent_peak_rss_mib']:.0f} MiB at 672 points",
        f"peak RSS, largest worker: {small['worker_peak_rss_mib']:.0f} MiB at 168 points, "
        f"{large['worker_peak_rss_mib']:.0f} MiB at 672 points",
    ]
    (args.out / f"bench_sweep{args.tag}.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
