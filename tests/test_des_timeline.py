"""Exact event-by-event timelines of tiny cases (SimPy engine)."""

import numpy as np
import pytest

from helpers import toy_platform, workload
from xsim.des import simulate
from xsim.des.simpy_engine import SimulationError
from xsim.scenario import load_scenario


def _micro(**overrides):
    sets = [f"{k}={v}" for k, v in {"producers": 2, "burst_bytes": 1000, "gap_us": 1, "bursts": 2,
                                    "warmup_bursts": 0, **overrides}.items()]
    return load_scenario("periodic").with_overrides(sets).build(toy_platform())


def test_two_producers_two_aligned_bursts_xstage():
    # Toy platform: T_iss0 = 1 us, R = 1000 B/us, Q = 500 B. Two producers inject 1000 B/us each:
    # q fills at t = 1.5 (500 B each issued), then both share R: 500 B left each at 500 B/us.
    r = simulate(_micro(), engine="simpy")
    t = r.times
    for p in (0, 1):
        i0, i1 = 2 * p, 2 * p + 1
        assert [t.mainloop_start[i0], t.mainloop_end[i0], t.issue_start[i0], t.issue_end[i0], t.drain_end[i0]] \
            == pytest.approx([0.0, 1.0, 1.0, 2.5, 3.0])
        assert [t.mainloop_start[i1], t.mainloop_end[i1], t.issue_start[i1], t.issue_end[i1], t.drain_end[i1]] \
            == pytest.approx([2.5, 3.5, 3.5, 5.0, 5.5])
        assert t.dep_wait_us[i1] == pytest.approx(1.5) and t.stall_us[i1] == 0.0
    qt, qq = r.traces[0]
    expected = {0.0: 0.0, 1.0: 0.0, 1.5: 500.0, 2.5: 500.0, 3.0: 0.0, 3.5: 0.0, 4.0: 500.0, 5.0: 500.0, 5.5: 0.0}
    for time, q in expected.items():
        assert np.interp(time, qt, qq) == pytest.approx(q)
    assert r.makespan_us == pytest.approx(5.5)


def test_completion_coupled_frees_the_slot_at_drain_end():
    r = simulate(_micro(coupling="completion-coupled"), engine="simpy")
    t = r.times
    assert [t.mainloop_start[1], t.issue_start[1], t.issue_end[1], t.drain_end[1]] == pytest.approx([3.0, 4.0, 5.5, 6.0])
    assert t.stall_us[1] == pytest.approx(0.5)  # dependencies met at 2.5, slot free at 3.0


def test_staging_depth_two_overlaps_the_next_mainloop_with_issue():
    # One producer, S = 2: mainloop of tile 1 runs while tile 0 issues; a slow drain stalls tile 2.
    w = workload([[{"mainloop": 1.0, "bytes": 3000, "t0": 1.0}] * 3], drain=1000.0, capacity=1000.0, staging_depth=2)
    t = simulate(w).times
    # tile 0: inject 3000 B/us, q full (1000 B) at t = 1.5; remaining 1500 B at 1000 B/us -> issue ends 3.0
    assert t.issue_end[0] == pytest.approx(3.0)
    assert t.mainloop_start[1] == pytest.approx(1.0) and t.mainloop_end[1] == pytest.approx(2.0)
    # tile 2 needs a slot: both busy (tile 0 issuing until 3.0, tile 1 waiting to issue) -> stall 1.0
    assert t.mainloop_start[2] == pytest.approx(3.0) and t.stall_us[2] == pytest.approx(1.0)
    # tile 1 issues into a full queue from 3.0: 3000 B at R -> 6.0; tile 2 likewise -> 9.0
    assert t.issue_end[1] == pytest.approx(6.0) and t.issue_end[2] == pytest.approx(9.0)
    assert t.drain_end[2] == pytest.approx(10.0)


def test_epilogue_release_and_counter_dependency():
    streams = [
        [{"mainloop": 2.0, "bytes": 0, "signal": 0}],                      # an L1 tile: local, signals row 0
        [{"mainloop": 1.0, "release": 0.5, "wait": 0, "value": 1, "epilogue": 0.25, "bytes": 500, "t0": 1.0}],
    ]
    t = simulate(workload(streams, n_counters=1)).times
    assert t.issue_end[0] == pytest.approx(2.0) and t.drain_end[0] == pytest.approx(2.0)
    assert t.dep_wait_us[1] == pytest.approx(1.5)   # released at 0.5, row ready at 2.0
    assert [t.mainloop_start[1], t.issue_start[1], t.issue_end[1], t.drain_end[1]] == pytest.approx([2.0, 3.0, 4.25, 4.25])  # 500 B/us < R: passes straight through


def test_deadlock_is_reported():
    w = workload([[{"mainloop": 1.0, "wait": 0, "value": 2}], [{"mainloop": 1.0, "signal": 0}]], n_counters=1)
    with pytest.raises(SimulationError, match="waits for counter 0 to reach 2, which stopped at 1"):
        simulate(w)
