"""The microbench's tile layouts: fence-then-arrive barrier, per-(CTA, burst) spread layout, max over CTAs."""

import dataclasses

import numpy as np
import pytest

from helpers import toy_platform
from xsim.arbitration import Arbitration
from xsim.builders import microbench
from xsim.builders import _microbench_layout as layout
from xsim.des import simulate
from xsim.params import resolve


def _params(**overrides):
    base = {"producers": 2, "burst_bytes": 1000, "gap_us": 0.0, "bursts": 3, "warmup_bursts": 0, "aligned": True}
    return resolve(microbench.PARAMS, {**base, **overrides}, "test")


def _run(params, platform, engine="simpy"):
    return simulate(microbench.build(params, platform), engine=engine, trace=False)


def test_fence_before_arrive_adds_the_barrier_latency_to_the_zero_gap_period():
    # Toy: T_iss0 = 1 us, R = 1000 B/us, Q = 500 B, barrier latency 0.5 us. Both producers'
    # issue ends at 1.5 and their last byte drains at 2.0 (test_des_timeline). Arrival on drain:
    # max(gap end + latency = 2.0, drain end 2.0) = 2.0, so the period is V/R = 2.0. Fence first:
    # the fence waits for the drain (2.0), then runs the latency: arrival 2.5, period V/R + L.
    platform = dataclasses.replace(toy_platform(), grid_barrier_us=0.5)
    plain = _run(_params(), platform)
    fenced = _run(_params(barrier_fence=True), platform)
    assert plain.workload.kind_names == ("burst", "gap")
    assert fenced.workload.kind_names == ("burst", "gap", "barrier")
    assert microbench.summarize(plain, _params())["period_us"]["mean"] == pytest.approx(2.0)
    t = fenced.times
    for p in (0, 1):
        b0, g0, f0, b1 = 9 * p, 9 * p + 1, 9 * p + 2, 9 * p + 3
        assert [t.issue_end[b0], t.mainloop_end[g0], t.drain_end[g0]] == pytest.approx([1.5, 1.5, 2.0])
        assert [t.mainloop_start[f0], t.mainloop_end[f0], t.issue_start[b1]] == pytest.approx([2.0, 2.5, 2.5])
    s = microbench.summarize(fenced, _params(barrier_fence=True))
    assert s["period_us"]["mean"] == pytest.approx(2.5) and s["issue_us"]["mean"] == pytest.approx(1.5)


def test_fence_is_ignored_without_a_barrier():
    platform = dataclasses.replace(toy_platform(), grid_barrier_us=0.5)
    a = microbench.summarize(_run(_params(aligned=False), platform), _params(aligned=False))
    b = microbench.summarize(_run(_params(aligned=False, barrier_fence=True), platform),
                             _params(aligned=False, barrier_fence=True))
    assert a == b


def _spread_platform(sigma=0.3):
    arb = Arbitration(sm_weights=(1.0, 3.0, 0.5, 2.0), placements={2: (1, 2)}, burst_sigma=sigma, seed=3)
    return dataclasses.replace(toy_platform(), arbitration=arb)


def test_weights_follow_the_sm_of_each_cta():
    platform = _spread_platform(sigma=0.0)
    assert platform.weights_for(2) == [3.0, 0.5]                 # CTA 0 on SM 1, CTA 1 on SM 2
    assert list(microbench.build(_params(), platform).producer_weight) == [3.0, 0.5]
    assert platform.weights_for(1) == [3.0]                      # a prefix of the nearest larger K


def test_spread_layout_with_unit_factors_is_the_per_cta_layout(monkeypatch):
    # One producer per (CTA, burst), X-Stage capacity n Q: with every factor 1 the timeline of
    # every burst is the per-CTA one (aligned bursts meet an empty X-Stage).
    params = _params(bursts=4)
    plain = microbench.summarize(_run(params, _spread_platform(sigma=0.0)), params)
    monkeypatch.setattr(Arbitration, "burst_factors", lambda self, k, n, backlog=None: np.ones((k, n)))
    platform = _spread_platform()
    assert layout.spread_layout(params, platform)
    result = _run(params, platform)
    assert result.workload.n_producers == 2 * 4
    spread = microbench.summarize(result, params)
    for key in ("period_us", "issue_us", "issue_max_us", "burst_issue_us"):
        for stat in ("mean", "median", "p90", "max", "n"):
            assert spread[key][stat] == pytest.approx(plain[key][stat], rel=1e-12), (key, stat)


def test_per_burst_factors_spread_the_slowest_cta_and_match_both_engines():
    params = _params(bursts=6)
    platform = _spread_platform(sigma=0.6)
    ref, fast = _run(params, platform, "simpy"), _run(params, platform, "fast")
    a, b = microbench.summarize(ref, params), microbench.summarize(fast, params)
    assert a["issue_max_us"] == b["issue_max_us"] and a["period_us"] == b["period_us"]
    start, end = layout.per_burst(ref, params)
    assert np.allclose(microbench.issue_max_samples(ref, 0, params), (end - start).max(axis=0))
    plain = microbench.summarize(_run(params, _spread_platform(sigma=0.0)), params)
    assert a["issue_us"]["max"] != plain["issue_us"]["max"]     # the bursts differ from one another
    assert np.std(end - start) > 0


def test_issue_max_of_the_per_cta_layout_is_the_slowest_producer_per_burst():
    params = _params(bursts=3, aligned=False, gap_us=0.2)
    platform = dataclasses.replace(toy_platform(), producer_weights=(1.0, 4.0))
    result = _run(params, platform)
    issue = result.issue_us[result.workload.bytes > 0].reshape(2, 3)
    assert np.allclose(microbench.issue_max_samples(result, 1), issue[:, 1:].max(axis=0))
    assert microbench.summarize(result, params)["issue_max_us"]["n"] == 3
