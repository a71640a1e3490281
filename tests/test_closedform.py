"""The closed form: the paper's equations and its own analytic numbers."""

import pytest

from xsim.closedform import design_test, isolated_burst, steady_state
from xsim.closedform import fa_a2a, megamoe
from xsim.platform import resolve_platform
from xsim.units import MIB

R = 717.0  # GB/s = 717_000 bytes/us


def test_steady_state_both_regimes():
    v = 717_000.0  # V/R = 1 us
    drain_limited = steady_state(v, gap_us=0.3, t_iss0_us=0.2, drain_rate_gbps=R)
    assert drain_limited.t_issue_us == pytest.approx(0.7)          # eq. 3: V/R - G
    assert drain_limited.t_period_us == pytest.approx(1.0)         # eq. 1: V/R
    assert drain_limited.delta_t_issue_us == pytest.approx(0.5)    # eq. 4
    assert drain_limited.g_star_us == pytest.approx(0.8)           # eq. 5
    assert drain_limited.t_period_cc_us == pytest.approx(1.3)      # G + V/R
    recovered = steady_state(v, gap_us=2.0, t_iss0_us=0.2, drain_rate_gbps=R)
    assert (recovered.t_issue_us, recovered.t_period_us, recovered.delta_t_issue_us) == pytest.approx((0.2, 2.2, 0))
    assert not recovered.drain_limited and drain_limited.drain_limited


def test_capacity_floor_only_when_a_gap_outlasts_q_over_r():
    v = 2 * 717_000.0  # V/R = 2 us; Q/R = 0.5 us
    paper = steady_state(v, gap_us=0.2, t_iss0_us=0.1, drain_rate_gbps=R, capacity_bytes=358_500)
    assert paper.t_issue_us == pytest.approx(1.8)  # R G <= Q: eq. 3 unchanged
    long_gap = steady_state(v, gap_us=1.0, t_iss0_us=0.1, drain_rate_gbps=R, capacity_bytes=358_500)
    assert long_gap.t_issue_us == pytest.approx(1.5)  # (V - Q) / R, not V/R - G = 1.0


def test_isolated_burst_knee():
    below = isolated_burst(1_000_000, t_iss0_us=1.0, drain_rate_gbps=R, capacity_bytes=500_000)
    assert below.q_peak_bytes == pytest.approx(283_000) and not below.capacity_limited
    assert below.t_issue_isolated_us == 1.0
    above = isolated_burst(2_000_000, t_iss0_us=1.0, drain_rate_gbps=R, capacity_bytes=500_000)
    assert above.capacity_limited and above.t_issue_isolated_us == pytest.approx(1_500_000 / 717_000)


def test_design_test_bounds():
    ok = design_test(717_000, gap_us=1.0, t_iss0_us=0.5, drain_rate_gbps=R, capacity_bytes=1e6)
    assert ok.rate_bound_ok and ok.capacity_bound_ok and ok.ok
    assert ok.injection_rate_gbps == pytest.approx(478)
    bad = design_test(717_000, gap_us=0.1, t_iss0_us=0.5, drain_rate_gbps=R, capacity_bytes=1e5)
    assert not bad.rate_bound_ok and not bad.capacity_bound_ok


def test_paper_numbers_on_paper_platform():
    """Sec. 4.3: aligned FA4 burst, K = 148, 32 KB: G* ~ 6.0 us, q_peak ~ 4.1 MiB < Q, M_ub* ~ 1.0K."""
    p = resolve_platform("paper-8gpu")
    k, b = 148, fa_a2a.tile_bytes(b_m=128, d=128, s_out=2)
    assert b == 32 * 1024
    v = k * b
    assert v / MIB == pytest.approx(4.625)  # "V ~ 4.6 MiB"
    t0, q = p.t_iss0_us(k, b), p.capacity_bytes(k)
    ss = steady_state(v, 0.0, t0, p.drain_rate_gbps)
    assert ss.g_star_us == pytest.approx(6.0, abs=0.05)
    iso = isolated_burst(v, t0, p.drain_rate_gbps, q)
    assert iso.q_peak_bytes / MIB == pytest.approx(4.1, abs=0.01) and iso.q_peak_bytes < q
    m_ub = fa_a2a.m_ub_star(b_n=128, g_star_us=ss.g_star_us, sigma_us=0.79)
    assert m_ub == pytest.approx(1000, rel=0.05)
    # Sec. 3.5: the knee at 33 KB per producer gives Q ~ 4.25 MiB by eq. 6.
    knee = 148 * 33 * 1024
    assert (knee - 717_000 * t0) / MIB == pytest.approx(4.25, abs=0.01)


def test_megamoe_terms():
    assert megamoe.interleaved_gap_us(5.0, 10.0, n1=1, n2=2) == pytest.approx(10.0)          # eq. 12
    assert megamoe.interleaved_overhead_us(4.0, 10.0, n1=1, n2=2) == 0.0                      # eq. 13
    assert megamoe.interleaved_overhead_us(8.0, 10.0, n1=1, n2=2) == pytest.approx(3.0)
    assert megamoe.critical_path_stall_us(9.93, 5.30) == pytest.approx(4.63)                  # eq. 15, Table 2
    assert megamoe.d_knee_rows(b_n=128, k_sm=148, h_inter=1024) == pytest.approx(9.25)        # eq. 16
    v = 4 * 717_000.0  # V/R = 4 us
    assert not megamoe.interleaving_sufficient(v, 0.5, 3.0, 2.0, n1=0, n2=1, drain_rate_gbps=R)
    assert megamoe.interleaving_sufficient(v, 0.5, 3.0, 2.0, n1=1, n2=1, drain_rate_gbps=R)   # eq. 14
    with pytest.raises(ValueError, match='"n2" must be > 0'):
        megamoe.interleaved_gap_us(1.0, 1.0, n1=1, n2=0)


def test_fa_terms():
    assert fa_a2a.q_loop_gap_lower_us(8192, b_n=128, sigma_us=0.79) == pytest.approx(50.56)
    assert fa_a2a.kv_tiles(8193, 128) == 65
    v = 717_000.0
    assert fa_a2a.cc_exposure_us(v, R, t_lat_us=0.5, t_cover_us=0.3) == pytest.approx(1.2)   # eq. 17
    assert fa_a2a.backpressure_us(v, R, g_qloop_us=0.5, t_iss0_us=0.2) == pytest.approx(0.3)  # eq. 18
    assert fa_a2a.critical_backpressure_us(0.3, 0.5) == 0.0                                   # eq. 19
    assert fa_a2a.total_exposure_us(64, 1.2) == pytest.approx(76.8)


def test_schedule_spans_decoupled_and_coupled():
    # V = 1e6 B at R = 100 GB/s: V/R = 10 us; T_L2 = 4 us, T_L1 = 8 us, n1 = n2 = 1
    s = megamoe.schedule_spans(1e6, 1.0, 4.0, 8.0, 1, 1, 100.0, capacity_bytes=5e5, covered=True)
    assert not s.eq14_wave_ok and s.eq14_int_ok                     # 10 > 1 + 4; 10 <= 1 + 4 + 8
    assert s.span_wave_us == pytest.approx(10.0)                     # backlogged issuer: V/R
    assert s.span_int_us == pytest.approx(5.0)                       # a burst into a drained stage: (V - Q)/R
    assert s.stall_wave_us == pytest.approx(6.0) and s.stall_int_us == 0.0   # eq. 15, covers 4 and 8 us
    c = megamoe.schedule_spans(1e6, 1.0, 4.0, 8.0, 1, 1, 100.0, capacity_bytes=5e5, covered=False)
    assert c.span_wave_us == pytest.approx(6.0)                      # eq. 11: V/R - G_wave
    assert c.span_int_us == pytest.approx(5.0)                       # V/R - G_int < (V - Q)/R: the capacity floor
    assert c.stall_wave_us == pytest.approx(6.0)                     # nothing covers the span
