"""Exact event-by-event timelines of tiny cases (SimPy engine)."""

import numpy as np
import pytest

from helpers import toy_platform, workload
from xsim.des import simulate
from xsim.des.simpy_engine import SimulationError
from xsim.scenario import load_scenario


def _micro(**overrides):
    sets = [f"{k}={v}" for k, v in {"producers": 2, "burst_bytes": 1000, "gap_us": 1, "bursts": 2, "aligned": "true",
                                    "warmup_bursts": 0, **overrides}.items()]
    return load_scenario("periodic").with_overrides(sets).build(toy_platform())


def test_two_producers_two_aligned_bursts_xstage():
    # Toy platform: T_iss0 = 1 us, R = 1000 B/us, Q = 500 B. Stream per producer: burst 0, gap 0,
    # burst 1, gap 1. Two producers inject 1000 B/us each: q fills at t = 0.5 (500 B each issued),
    # then they share R: 500 B left each at 500 B/us, issue ends at 1.5, the last byte drains at
    # 2.0 (the barrier arrival), the gap runs 1.5-2.5, so burst 1 starts at 2.5.
    r = simulate(_micro(), engine="simpy")
    t = r.times
    for p in (0, 1):
        b0, g0, b1, g1 = 4 * p, 4 * p + 1, 4 * p + 2, 4 * p + 3
        assert [t.mainloop_start[b0], t.issue_start[b0], t.issue_end[b0], t.drain_end[b0]] \
            == pytest.approx([0.0, 0.0, 1.5, 2.0])
        assert [t.mainloop_start[g0], t.mainloop_end[g0], t.issue_end[g0]] == pytest.approx([1.5, 2.5, 2.5])
        assert [t.mainloop_start[b1], t.issue_start[b1], t.issue_end[b1], t.drain_end[b1]] \
            == pytest.approx([2.5, 2.5, 4.0, 4.5])
        assert [t.mainloop_start[g1], t.mainloop_end[g1]] == pytest.approx([4.0, 5.0])
        assert t.dep_wait_us[b1] == 0.0 and t.stall_us[b1] == 0.0
    qt, qq = r.traces[0]
    expected = {0.0: 0.0, 0.5: 500.0, 1.5: 500.0, 2.0: 0.0, 2.5: 0.0, 3.0: 500.0, 4.0: 500.0, 4.5: 0.0}
    for time, q in expected.items():
        assert np.interp(time, qt, qq) == pytest.approx(q)
    assert r.makespan_us == pytest.approx(5.0)
    assert r.period_stats().mean == pytest.approx(2.5) and r.issue_stats().mean == pytest.approx(1.5)


def test_aligned_barrier_waits_for_the_drain_when_the_gap_is_short():
    r = simulate(_micro(gap_us=0.1), engine="simpy")
    # burst 0 drains at 2.0, later than its gap ends (1.6): burst 1 starts at 2.0
    assert r.times.issue_start[2] == pytest.approx(2.0)
    free = simulate(_micro(gap_us=0.1, aligned="false"), engine="simpy")
    assert free.times.issue_start[2] == pytest.approx(1.6)


def test_completion_coupled_frees_the_slot_at_drain_end():
    r = simulate(_micro(coupling="completion-coupled"), engine="simpy")
    t = r.times
    assert [t.mainloop_start[1], t.mainloop_end[1]] == pytest.approx([2.0, 3.0])
    assert t.stall_us[1] == pytest.approx(2.0)  # the gap's mainloop waited for burst 0 to drain
    assert [t.issue_start[2], t.issue_end[2], t.drain_end[2]] == pytest.approx([3.0, 4.5, 5.0])


def test_weighted_arbitration_under_backpressure():
    # Two issuers of 1000 B at 1000 B/us; R = 1000 B/us shared 3 : 1; each owns Q/2 = 250 B.
    # Both have bytes outstanding from t = 0+, so producer 0 drains at 750 and producer 1 at
    # 250 B/us. Producer 1's share fills at t = 1/3 (750 B/us net), after which it injects only
    # as fast as it drains (250 B/us). Producer 0 issues its 1000 B by t = 1.0 (its share fills
    # just then) and drains its 250 B by t = 4/3; producer 1 then gets the whole R and issues its
    # last 416.7 B at 1000 B/us: issue ends at 1.75, later than a fair share would give (1.5).
    w = workload([[{"bytes": 1000.0, "t0": 1.0}], [{"bytes": 1000.0, "t0": 1.0}]], weights=[3.0, 1.0])
    r = simulate(w)
    assert r.times.issue_end.tolist() == pytest.approx([1.0, 1.75])
    assert r.times.drain_end.tolist() == pytest.approx([4 / 3, 2.0])
    fair = simulate(workload([[{"bytes": 1000.0, "t0": 1.0}]] * 2)).times
    assert fair.issue_end.tolist() == pytest.approx([1.5, 1.5])
    assert fair.drain_end.tolist() == pytest.approx([2.0, 2.0])


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


def test_barrier_arrival_at_issue_end_when_it_does_not_wait_for_the_drain():
    r = simulate(_micro(gap_us=0.1, barrier_waits_drain="false"), engine="simpy")
    assert r.times.issue_start[2] == pytest.approx(1.6)  # gap end; burst 0 still draining


def test_local_tile_completes_when_its_producers_stores_have_drained():
    # A remote tile (issue ends 1.0, drains at 3.0: 3000 B at 1000 B/us), then a local tile whose
    # mainloop ends at 2.0: its drain end (and its drain-gated signal) waits until 3.0.
    streams = [[{"bytes": 3000.0, "t0": 1.0}, {"mainloop": 1.0, "signal": 0, "signal_on_drain": True}],
               [{"wait": 0, "value": 1, "mainloop": 0.5}]]
    t = simulate(workload(streams, capacity=1e6, n_counters=1, staging_depth=1)).times
    assert [t.issue_end[0], t.drain_end[0]] == pytest.approx([1.0, 3.0])
    assert [t.issue_end[1], t.drain_end[1]] == pytest.approx([2.0, 3.0])
    assert t.mainloop_start[2] == pytest.approx(3.0)
