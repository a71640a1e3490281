"""How many of an X-Stage's producers are not idle at each fluid event (a drain turn).

A producer is idle when it issues nothing, holds no bytes and has no drain mark pending
(q = left = 0, no mark): the per-producer passes of ``xsim.des.fluid`` are no-ops on it, so
only the others would need visiting. Counted on the SimPy engine (same events as the fast
one) by wrapping ``XStage._settle``; prints the mean and median count per workload.

    PYTHONPATH=. .venv/bin/python benchmarks/live_producers.py
"""

from __future__ import annotations

import numpy as np

from xsim.des import simpy_engine
from xsim.platform import resolve_platform
from xsim.scenario import load_scenario

counts: list[int] = []
_settle = simpy_engine.XStage._settle


def counting_settle(self) -> None:
    busy = (self.q > 0.0) | (self.left > 0.0) | (self.mark < np.inf)
    busy |= np.array([issued is not None for issued in self._issued], dtype=bool)
    counts.append(int(busy.sum()))
    _settle(self)


def main() -> None:
    simpy_engine.XStage._settle = counting_settle
    cases = [(None, ["producers=132", "bursts=200"]), ("paper-8gpu", ["producers=132", "bursts=200"])]
    cases += [(None, ["bursts=60", "warmup_bursts=20", f"gap_us={gap}", f"burst_bytes={b}"])
              for gap in (0.0, 3.0, 6.5) for b in ("4KB", "24KB", "48KB")]
    print("platform | sets | drain turns | non-idle producers: mean, median (of 132)")
    for platform, sets in cases:
        counts.clear()
        simpy_engine.run(load_scenario("periodic").with_overrides(sets).build(resolve_platform(platform)), trace=False)
        a = np.asarray(counts)
        print(f"{platform or 'default'} | {' '.join(sets)} | {len(a)} | {a.mean():.1f}, {np.median(a):.0f}")


if __name__ == "__main__":
    main()
