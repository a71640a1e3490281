"""Peak memory per tile of one simulation, per engine, with and without the q(t) trace and the
--out files: the numbers behind xsim.budget.BYTES_PER_TILE (the estimate before a run).

Each case runs in a fresh process (peak RSS is per process): the engine is loaded first, then
the peak RSS grows by what building, simulating, summarizing (and writing --out) one
``periodic`` scenario of K = 132 x N bursts takes. Not a test: run it, read it, commit the output.

    PYTHONPATH=. /work/venv/bin/python benchmarks/bench_memory.py [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from provenance import commit_note  # benchmarks/ is the script's folder

CHILD = """
import json, resource, sys, tempfile, time
from pathlib import Path
engine, trace, bursts, out = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), sys.argv[4] == "1"
from xsim.budget import estimate
from xsim.des import simulate
from xsim.platform import resolve_platform
from xsim.scenario import load_scenario
import plotly.graph_objects, simpy  # loaded before the baseline
from xsim.commands.simulate import write_outputs
if engine == "fast":
    from xsim.des.fast_engine import warm_up
    warm_up()
p = resolve_platform(None)
s = load_scenario("periodic").with_overrides([f"bursts={bursts}", "warmup_bursts=1"])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
r = simulate(s.module.build(dict(s.params), p), engine=engine, trace=trace)
s.summarize(r)
if out:
    write_outputs(Path(tempfile.mkdtemp()), r, {})
seconds = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
e = estimate(s.module, dict(s.params), p, engine, trace, out)
tiles = e.tiles
print(json.dumps(dict(engine=engine, trace=trace, out=out, tiles=tiles, peak_delta_mib=(peak - base) / 1024,
                      bytes_per_tile=(peak - base) * 1024 / tiles, estimate_bytes_per_tile=
                      (e.memory_bytes - (64 << 20)) / tiles, seconds=seconds)))
"""

CASES = [("fast", 0, 16000, 0), ("fast", 1, 16000, 0), ("fast", 1, 4000, 1),
         ("simpy", 0, 500, 0), ("simpy", 1, 500, 0), ("simpy", 1, 300, 1)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    rows = []
    for engine, trace, bursts, out in CASES:
        done = subprocess.run([sys.executable, "-c", CHILD, engine, str(trace), str(bursts), str(out)],
                              capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    lines = [f"peak memory per tile ({commit_note()})",
             f"{'engine':6} {'trace':5} {'out':5} {'tiles':>9} {'peak MiB':>9} {'B/tile':>7} {'estimate':>8} {'s':>6}"]
    for r in rows:
        lines.append(f"{r['engine']:6} {str(r['trace']):5} {str(r['out']):5} {r['tiles']:>9} "
                     f"{r['peak_delta_mib']:>9.1f} {r['bytes_per_tile']:>7.0f} {r['estimate_bytes_per_tile']:>8.0f} "
                     f"{r['seconds']:>6.1f}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_memory.json").write_text(json.dumps({"note": commit_note(), "rows": rows}, indent=2) + "\n")
    (args.out / "bench_memory.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
