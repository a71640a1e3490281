"""Invariants of the DES, as property tests over random workloads (SimPy engine)."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import workload
from xsim.des import simulate

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

tile = st.fixed_dictionaries({
    "mainloop": st.floats(0.0, 3.0), "epilogue": st.sampled_from([0.0, 0.0, 0.2]),
    "bytes": st.sampled_from([0.0, 100.0, 700.0, 2500.0]), "t0": st.floats(0.1, 2.0),
    "release": st.sampled_from([0.0, 0.0, 1.5]),
})
streams = st.lists(st.lists(tile, min_size=1, max_size=5), min_size=1, max_size=4)
config = st.fixed_dictionaries({
    "drain": st.floats(100.0, 3000.0), "capacity": st.floats(200.0, 4000.0),
    "staging_depth": st.integers(0, 3), "coupling": st.sampled_from(["xstage", "completion-coupled"]),
})


@SETTINGS
@given(streams, config)
def test_conservation_capacity_and_floor(s, cfg):
    w = workload(s, **cfg)
    r = simulate(w)
    t = r.times
    assert not np.isnan(t.drain_end).any()
    # every byte issued is drained: the queue ends empty and the last drain end follows the last issue end
    qt, qq = r.traces[0]
    assert qq[-1] == 0.0
    # 0 <= q(t) <= Q at every breakpoint (q is piecewise linear between them)
    assert (qq >= 0).all() and (qq <= cfg["capacity"] * (1 + 1e-9)).all()
    # issue never beats the backpressure-free floor; drain never precedes issue end
    remote = w.bytes > 0
    floor = w.epilogue_us + np.where(remote, w.t_iss0_us, 0.0)
    assert (r.issue_us >= floor - 1e-9).all()
    assert (t.drain_end >= t.issue_end - 1e-12).all()
    # a tile's mainloop follows its release time and its producer's previous mainloop
    assert (t.mainloop_start >= w.release_us - 1e-12).all()
    # total drain time is at least total bytes / R
    if remote.any():
        assert t.drain_end.max() >= w.bytes.sum() / cfg["drain"] - 1e-9


@SETTINGS
@given(streams, config, st.integers(1, 3))
def test_bytes_drained_equal_bytes_issued(s, cfg, gpus):
    """Per X-Stage, the drain's cumulative output equals the bytes its producers issued."""
    w = workload(s, gpus=[p % gpus for p in range(len(s))], n_xstages=gpus, **cfg)
    r = simulate(w)
    for g in range(gpus):
        issued = w.bytes[w.producer_gpu[w.producer] == g].sum()
        assert abs(r.drained_bytes[g] - issued) <= 1e-9 * max(issued, 1.0)
        assert r.traces[g][1][-1] == 0.0


@SETTINGS
@given(st.integers(1, 6), st.floats(0.0, 4.0), st.integers(2, 6),
       st.sampled_from([100.0, 400.0, 1000.0]), st.floats(1.05, 3.0))
def test_issue_time_monotone_in_volume(producers, gap, bursts, b_small, factor):
    def mean_issue(b):
        w = workload([[{"mainloop": gap, "bytes": b, "t0": b / 800.0}] * bursts] * producers,
                     drain=1000.0, capacity=1500.0, staging_depth=0)
        return simulate(w).issue_us.mean()
    assert mean_issue(b_small * factor) >= mean_issue(b_small) - 1e-9
