"""A 2,000-point sweep on local processes (--jobs 2) vs a dask LocalCluster (--scheduler local:2).

Each run is the CLI in a fresh process, as a user would start it. Reported per executor: the
wall time of the whole command (the cluster's start and stop included) and of the points
alone (first row to last), points per second, and the per-point overhead: wall time x workers
/ points minus the mean simulation time of a point (the row's ``wall_s``). Two point sizes:
tiny points (the overhead dominates) and points of ~10 ms (a realistic share). Not a test:
run it, read it, commit the output.

    PYTHONPATH=. /work/venv/bin/python benchmarks/bench_sweep_cluster.py [--out benchmarks/results]
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

GRID = ["--grid", "gap_us=0:9.95:0.05", "--grid", "burst_bytes=4KB:40KB:4KB"]   # 200 x 10 = 2000 points
SIZES = {"tiny (K=8, 50 bursts)": ["--set", "producers=8", "--set", "bursts=50", "--set", "warmup_bursts=5"],
         "small (K=132, 20 bursts)": ["--set", "producers=132", "--set", "bursts=20", "--set", "warmup_bursts=5"]}
EXECUTORS = {"local processes (--jobs 2)": ["--jobs", "2"], "dask LocalCluster (--scheduler local:2)":
             ["--scheduler", "local:2"]}


def run(extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as out:
        argv = [sys.executable, "-m", "xsim", "sweep", "periodic", *GRID, *extra, "--out", out, "--json",
                "--no-plots"]
        t0 = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-2000:])
        path = Path(out) / "rows.jsonl"
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        doc = json.loads(proc.stdout)
    compute = sum(r["wall_s"] for r in rows)
    return {"rows": len(rows), "command_wall_s": wall, "mean_point_s": compute / len(rows), "workers": doc["jobs"],
            "executor": doc["executor"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    result = {"commit": commit_note(), "cores": os.cpu_count(), "runs": {}}
    lines = [f"xsim sweep periodic, 2000 points, engine fast, {os.cpu_count()} cores ({result['commit']})",
             f"{'points':26} {'executor':40} {'wall s':>7} {'points/s':>9} {'point ms':>9} {'overhead ms/point':>18}"]
    for size, sets in SIZES.items():
        for name, options in EXECUTORS.items():
            r = run(sets + options)
            r["points_per_s"] = r["rows"] / r["command_wall_s"]
            r["overhead_ms_per_point"] = 1e3 * (r["command_wall_s"] * r["workers"] / r["rows"] - r["mean_point_s"])
            result["runs"][f"{size} | {name}"] = r
            lines.append(f"{size:26} {name:40} {r['command_wall_s']:>7.2f} {r['points_per_s']:>9.1f} "
                         f"{1e3 * r['mean_point_s']:>9.2f} {r['overhead_ms_per_point']:>18.2f}")
            print(lines[-1], flush=True)
    result["load_average_1_5_15"] = os.getloadavg()
    lines.append(f"load average at the end (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in result['load_average_1_5_15'])}"
                 " (the machine is shared; other processes compete for its 2 cores)")
    lines.append("overhead = wall x workers / points - mean point time: the command's start (imports, the "
                 "cluster's start and stop), scheduling, and moving rows, shared over the points")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_sweep_cluster.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "bench_sweep_cluster.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
