"""What the fluid X-Stage's producers are doing at each drain turn, and how many the fast
engine's ``flows`` has to examine.

The virtual clock (``xsim.des.fluid``) keeps a producer's event keys fixed while it is IDLE,
BACKLOG or FULL; only touched producers (an event due, an injection) and issuers in PASS or
MIXED are re-examined at a turn. This counts, per drain turn, the producers in each mode and
those candidates (touched + active, before ``flows`` runs). Counted on the SimPy engine (same
turns as the fast one) by wrapping ``XStage._flows``; prints means per workload.

    PYTHONPATH=. .venv/bin/python benchmarks/fluid_modes.py
"""

from __future__ import annotations

import numpy as np

from xsim.des import simpy_engine
from xsim.des.fluid_state import List, StageCount, Status
from xsim.platform import resolve_platform
from xsim.scenario import load_scenario

MODES = ("IDLE", "BACKLOG", "FULL", "PASS", "MIXED")
rows: list[list[int]] = []
_flows = simpy_engine.XStage._flows


def counting_flows(self) -> None:
    lists, count, status = self.s.lists, self.s.count, self.s.status
    active = set(lists[List.ACTIVE, :count[StageCount.ACTIVE]].tolist())
    touched = set(lists[List.TOUCHED, :count[StageCount.TOUCHED]].tolist())
    rows.append([int((status[Status.MODE, :self.n] == m).sum()) for m in range(len(MODES))] + [len(active | touched)])
    _flows(self)


def main() -> None:
    simpy_engine.XStage._flows = counting_flows
    cases = [(None, ["producers=132", "bursts=200"]), ("paper-8gpu", ["producers=132", "bursts=200"])]
    cases += [(None, ["bursts=60", "warmup_bursts=20", f"gap_us={gap}", f"burst_bytes={b}"])
              for gap in (0.0, 3.0, 6.5) for b in ("4KB", "24KB", "48KB")]
    print("platform | sets | water-fills | mean producers per mode: " + ", ".join(MODES) + " | mean candidates")
    for platform, sets in cases:
        rows.clear()
        simpy_engine.run(load_scenario("periodic").with_overrides(sets).build(resolve_platform(platform)), trace=False)
        a = np.asarray(rows, dtype=float)
        modes = ", ".join(f"{m:.1f}" for m in a[:, :-1].mean(axis=0))
        print(f"{platform or 'default'} | {' '.join(sets)} | {len(a)} | {modes} | {a[:, -1].mean():.1f}")


if __name__ == "__main__":
    main()
