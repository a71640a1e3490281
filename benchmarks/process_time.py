"""CPU (process) time of both engines on bench_engines' workload, for A/B comparisons of two checkouts.

Wall times on a shared 2-core machine move with the load; the process's own CPU time moves
much less. Run it alternately in two checkouts (each with its numba cache warm) and compare
the minima:

    for i in 1 2 3; do for d in OLD NEW; do (cd $d && PYTHONPATH=. python benchmarks/process_time.py $d); done; done
"""

from __future__ import annotations

import os
import sys
import time

from xsim.des import fast_engine, simpy_engine
from xsim.platform import resolve_platform
from xsim.scenario import load_scenario


def best_process_s(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else "."
    cells = []
    for platform in (None, "paper-8gpu"):
        w = load_scenario("periodic").with_overrides(["producers=132", "bursts=200"]).build(resolve_platform(platform))
        fast_engine.run(w)
        cells.append(f"fast {platform or 'default'} {best_process_s(lambda: fast_engine.run(w), 15) * 1e3:.1f} ms")
    w = load_scenario("periodic").with_overrides(["producers=132", "bursts=40", "warmup_bursts=10"]).build(
        resolve_platform(None))
    simpy_engine.run(w)
    cells.append(f"simpy default x40 bursts {best_process_s(lambda: simpy_engine.run(w), 3):.3f} s")
    print(f"{label}: " + "; ".join(cells) + f"; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
