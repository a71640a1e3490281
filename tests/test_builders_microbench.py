"""The microbenchmark builder: streams of burst and gap tiles, barriers as counters, its closed form."""

import numpy as np
import pytest

from helpers import toy_platform
from xsim.builders import microbench
from xsim.params import resolve


def build(**given):
    params = resolve(microbench.PARAMS, {"producers": 3, "bursts": 4, "warmup_bursts": 1, "burst_bytes": 1000,
                                         "gap_us": 2.0, **given}, "test")
    return microbench.build(params, toy_platform()), params


def test_each_stream_alternates_burst_and_gap_tiles_numbered_by_burst():
    w, _ = build(aligned=False)
    assert w.n_producers == 3 and w.n_tiles == 3 * 2 * 4
    lo, hi = w.offsets[1], w.offsets[2]
    assert [w.kind_names[k] for k in w.kind[lo:hi]] == ["burst", "gap"] * 4
    assert list(w.burst_index[lo:hi]) == [0, 0, 1, 1, 2, 2, 3, 3]  # a gap tile carries its burst's number
    assert list(w.bytes[lo:hi:2]) == [1000.0] * 4 and not w.bytes[lo + 1:hi:2].any()
    assert w.mainloop_us[lo + 1] == pytest.approx(2.0 + toy_platform().burst_overhead_us)
    assert w.n_counters == 0 and (w.wait_counter == -1).all() and (w.signal_counter == -1).all()


def test_aligned_bursts_wait_for_every_producer_at_the_previous_barrier():
    w, _ = build(aligned=True)
    k = 3
    burst = w.kind == 0
    assert w.n_counters == 4
    # burst j > 0 waits for counter j - 1 to reach K; gap j arrives at counter j, on drain
    assert list(w.wait_counter[burst][:4]) == [-1, 0, 1, 2] and (w.wait_value[burst & (w.burst_index > 0)] == k).all()
    assert list(w.signal_counter[~burst][:4]) == [0, 1, 2, 3] and w.signal_on_drain[~burst].all()
    w2, _ = build(aligned=True, barrier_waits_drain=False)
    assert not w2.signal_on_drain.any()


def test_isolated_mode_couples_each_burst_to_its_drain():
    w, _ = build(mode="isolated")
    assert w.coupling == "completion-coupled" and w.slots == 1


def test_warmup_must_leave_bursts():
    with pytest.raises(ValueError, match='"warmup_bursts" \\(4\\) must be < "bursts" \\(4\\)'):
        build(warmup_bursts=4)


def test_predict_is_the_closed_form_of_the_same_point():
    _, params = build(aligned=True, gap_us=0.0)
    p = microbench.predict(params, toy_platform())
    # toy: T_iss0 = 1 us, R = 1000 B/us, Q = 500 B; V = 3000 B at zero gap: drain-limited,
    # issue = period = V/R = 3 us; an isolated burst meets an empty X-Stage: (V - Q)/R = 2.5 us
    assert p["period_us"] == pytest.approx(3.0) and p["issue_us"] == pytest.approx(3.0)
    iso = microbench.predict({**params, "mode": "isolated"}, toy_platform())
    assert set(iso) == {"issue_us", "q_peak_bytes"} and iso["issue_us"] == pytest.approx(2.5)


def test_arbitration_weights_come_from_the_platform():
    w, _ = build()
    np.testing.assert_array_equal(w.producer_weight, toy_platform().weights_for(3))


def test_free_running_factor_scales_free_running_bursts_only():
    import dataclasses
    base = toy_platform()
    fast = dataclasses.replace(base, issue=dataclasses.replace(base.issue, free_running_factor=0.8))
    for given, scaled in (({"aligned": False}, True), ({"aligned": True}, False), ({"mode": "isolated"}, False)):
        params = resolve(microbench.PARAMS, {"producers": 3, "bursts": 4, "warmup_bursts": 1, "burst_bytes": 1000,
                                             "gap_us": 2.0, **given}, "test")
        plain, other = microbench.build(params, base), microbench.build(params, fast)
        burst = plain.bytes > 0
        ratio = other.t_iss0_us[burst] / plain.t_iss0_us[burst]
        np.testing.assert_allclose(ratio, 0.8 if scaled else 1.0)


def test_the_x_stage_drains_at_the_platforms_r_of_k():
    import dataclasses
    from xsim.units import gbps_to_bytes_per_us
    base = toy_platform()
    law = dataclasses.replace(base, drain_half_producers=4.0)
    params = resolve(microbench.PARAMS, {"producers": 3, "bursts": 4, "warmup_bursts": 1, "burst_bytes": 1000}, "test")
    plain, slow = microbench.build(params, base), microbench.build(params, law)
    assert plain.xstages[0].drain_bytes_per_us == gbps_to_bytes_per_us(base.drain_rate_gbps)
    assert slow.xstages[0].drain_bytes_per_us == pytest.approx(gbps_to_bytes_per_us(law.drain_rate_for(3)))
    assert law.drain_rate_for(3) < base.drain_rate_gbps
    assert microbench.predict(params, law)["period_us"] > microbench.predict(params, base)["period_us"]


def test_free_capacity_scales_the_share_of_free_running_ctas_only():
    base = toy_platform()
    for given, scaled in (({"aligned": False}, True), ({"aligned": True}, False), ({"mode": "isolated"}, False)):
        plain, _ = build(drained_share=False, **given)
        more, _ = build(drained_share=False, free_capacity=1.5, **given)
        ratio = more.xstages[0].capacity_bytes / plain.xstages[0].capacity_bytes
        assert ratio == pytest.approx(1.5 if scaled else 1.0)
        assert plain.xstages[0].capacity_bytes == pytest.approx(
            base.capacity_bytes(3) * (plain.n_producers // 3))   # default 1: the shipped share Q(K)/K
        np.testing.assert_array_equal(plain.t_iss0_us, more.t_iss0_us)
    with pytest.raises(ValueError):
        build(free_capacity=0)


def test_past_g_star_a_free_running_cta_holds_its_whole_burst():
    base = toy_platform()
    k, b = 3, 4 * base.capacity_bytes(3)          # V = 4 K Q: every CTA's burst overflows Q(K)/K
    g_star = microbench.predict(resolve(microbench.PARAMS, {"producers": k, "burst_bytes": b, "aligned": False},
                                        "test"), base)["g_star_us"]
    for gap, aligned, want in ((1.01 * g_star, False, k * b), (0.99 * g_star, False, base.capacity_bytes(k)),
                               (1.01 * g_star, True, base.capacity_bytes(k))):
        w, _ = build(burst_bytes=b, gap_us=gap, aligned=aligned)
        assert w.xstages[0].capacity_bytes == pytest.approx(want * (w.n_producers // k))
        off, _ = build(burst_bytes=b, gap_us=gap, aligned=aligned, drained_share=False)
        assert off.xstages[0].capacity_bytes == pytest.approx(base.capacity_bytes(k) * (w.n_producers // k))


def test_an_aligned_zero_gap_burst_waits_the_zero_gap_barrier():
    import dataclasses
    base = dataclasses.replace(toy_platform(), grid_barrier_us=0.9, grid_barrier_zero_gap_us=0.6)
    for gap, want in ((0.0, 0.6), (2.0, 0.9)):
        params = resolve(microbench.PARAMS, {"producers": 3, "bursts": 4, "warmup_bursts": 1, "burst_bytes": 1000,
                                             "gap_us": gap, "aligned": True}, "test")
        w = microbench.build(params, base)
        gap_tiles = w.kind == w.kind_names.index("gap")
        np.testing.assert_allclose(w.mainloop_us[gap_tiles], gap + base.burst_overhead_us + want)
