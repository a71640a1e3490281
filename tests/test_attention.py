"""xsim.attention: the rank's tiles (fa_layout's index math), the Q-loop fit, eqs. 17-20."""

import math

import numpy as np
import pytest

from hwkernels import fa_layout
from xsim.attention.predict import drain_windows, predict
from xsim.attention.qloop import QLoop, fit_qloop
from xsim.attention.shape import AttentionShape, drain_peers
from xsim.closedform.fa_a2a import kv_tiles
from xsim.platform import CapacityModel, IssueModel, Platform, resolve_platform
from xsim.units import drain_time_us


def shape(**kw):
    base = dict(seq_len=8192, batch=2, heads=16, sp=4, head_dim=128, block_m=128, block_n=128, producers=16)
    return AttentionShape(**{**base, **kw})


def toy(rate_gbps=10.0, t0_us=1.0, capacity_bytes=1e9):
    return Platform(name="toy", drain_rate_gbps=rate_gbps, issue=IssueModel(t_fixed_us=t0_us),
                    capacity=CapacityModel(max_bytes=capacity_bytes), sms=16, gpus=1)


# ---- the rank's tiles --------------------------------------------------------------------------

def test_tiles_follow_the_kernels_order_and_owners():
    s = shape()
    assert s.heads_local == 4 and s.n_tiles == 2 * 4 * 64 and s.tile_bytes == 32 * 1024 and s.kv_tiles == 64
    want = [fa_layout.owner_of(mb * 128, 8192, 4) for _, _, mb in fa_layout.tiles(2, 4, 8192, 128)]
    assert s.tile_owner.tolist() == want
    # the rank's own quarter of the sequence stays local; the other three quarters leave
    assert (s.remote_bytes == 0).sum() == s.n_tiles // 4
    assert s.remote_bytes.sum() == 3 / 4 * s.n_tiles * s.tile_bytes


def test_programs_partition_the_tiles_and_waves_add_up():
    s = shape(producers=12)
    taken = np.concatenate([s.program_tiles(p) for p in range(s.programs)])
    assert sorted(taken.tolist()) == list(range(s.n_tiles))
    assert s.waves == math.ceil(s.n_tiles / 12)
    assert s.wave_bytes().sum() == s.remote_bytes.sum()
    assert s.wave_remote_tiles().sum() == (s.remote_bytes > 0).sum()
    assert shape(seq_len=1024, batch=1, heads=4, producers=132).programs == 1 * 1 * 8  # fewer tiles than CTAs


@pytest.mark.parametrize("kw, message", [
    (dict(heads=18), '"heads" (18) must be divisible by "sp" N (4)'),
    (dict(seq_len=8190), '"seq_len" M (8190) must be divisible by "sp" N (4)'),
    (dict(seq_len=4 * 200), 'must be divisible by the tile "block_m" (128)'),
    (dict(head_dim=96), '"head_dim" must be one of (64, 128), got 96'),
    (dict(dtype="fp16"), '"dtype" must be one of'),
    (dict(producers=0), '"producers" must be an integer >= 1'),
    (dict(rank=4), '"rank" must be in [0, 4)'),
])
def test_bad_shapes_are_one_line_errors(kw, message):
    with pytest.raises(ValueError) as err:
        shape(**kw)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_drain_peers():
    assert drain_peers("host", 8) == 1 and drain_peers("peer", 8) == 7 and drain_peers("peer", 1) == 1
    with pytest.raises(ValueError, match='"destination"'):
        drain_peers("nvme", 2)


# ---- the Q-loop ------------------------------------------------------------------------------

def test_fit_recovers_sigma_and_fixed_part():
    m = [1024, 2048, 4096, 8192, 16384, 65536]
    q = fit_qloop(m, [3.0 + 0.8 * kv_tiles(x, 128) for x in m], block_n=128)
    assert q.sigma_us_per_kv_tile == pytest.approx(0.8) and q.fixed_us == pytest.approx(3.0, abs=1e-9)
    assert q.n_points == 6 and q.rms_residual_us < 1e-9
    assert q.gap_us(8192) == pytest.approx(3.0 + 0.8 * 64)


def test_fit_needs_two_lengths_and_a_rising_line():
    with pytest.raises(ValueError, match=">= 2 sequence lengths"):
        fit_qloop([4096, 4096], [10.0, 11.0], 128)
    with pytest.raises(ValueError, match="not > 0"):
        fit_qloop([1024, 8192], [50.0, 10.0], 128)
    with pytest.raises(ValueError, match="fixed part"):   # a line below 0 at no KV tiles
        fit_qloop([16384, 32768], [200.0, 420.0], 128)
    with pytest.raises(ValueError, match='"sigma_us_per_kv_tile" must be > 0'):
        QLoop(0.0, 1.0, 128)


# ---- eqs. 17-20 --------------------------------------------------------------------------------

def test_paper_threshold_g_star_6us_and_m_ub_star_1k():
    """Sec. 4.3: K = 148, 32 KB per CTA, sigma = 0.79 us per KV tile: G* ~ 6.0 us, M_ub* ~ 1.0K."""
    paper = resolve_platform("paper-8gpu")
    s = AttentionShape(seq_len=8192, batch=1, heads=24, sp=8, head_dim=128, block_m=128, block_n=128, producers=148)
    p = predict(s, QLoop(0.79, 0.0, 128), paper, "peer")
    assert p.g_star_us == pytest.approx(6.0, abs=0.05)
    assert p.m_ub_star_tokens == pytest.approx(128 * p.g_star_us / 0.79) and 900 < p.m_ub_star_tokens < 1100
    assert p.e_drain_us == 0.0  # M = 8192 >> M_ub*: no drain-induced residual (Sec. 5.3)


def test_drain_residual_vanishes_at_m_ub_star_and_not_before():
    """With no fixed part, eq. 20's bound is tight: the fully remote waves (sp = 2: owner 1's half
    of every head) stop backpressuring exactly where sigma M / b_n reaches G*."""
    plat, q = toy(), QLoop(0.5, 0.0, 128)
    at = lambda m: predict(shape(seq_len=m, batch=1, heads=2, sp=2, producers=64), q, plat)  # noqa: E731
    m_ub = at(16384).m_ub_star_tokens
    assert at(16384).g_star_us == pytest.approx(drain_time_us(64 * 32768, 10.0) - 1.0)
    assert m_ub == pytest.approx(128 * at(16384).g_star_us / 0.5)
    below, above = 256 * int(m_ub // 256), 256 * int(m_ub // 256 + 1)
    assert at(below).e_drain_us > 0 and at(above).e_drain_us == 0.0
    assert at(2 * above).e_res_us == at(2 * above).e_issue_us == pytest.approx(at(2 * above).remote_waves * 1.0)


def test_eq18_per_wave_on_uniform_waves():
    """Every wave one head (K = M / b_m): 1/8 local, 7/8 remote tiles, dt = V_w/R - G - T_iss0."""
    plat, q = toy(), QLoop(0.5, 2.0, 128)
    p = predict(shape(seq_len=8192, batch=1, heads=16, sp=8, producers=64), q, plat)
    v_w = 56 * 32768
    assert p.waves == p.remote_waves == 2 and p.max_wave_bytes == v_w
    assert p.e_drain_us == pytest.approx(2 * (drain_time_us(v_w, 10.0) - p.g_qloop_us - 1.0))
    assert p.e_res_us == pytest.approx(2 * (drain_time_us(v_w, 10.0) - p.g_qloop_us))


def test_cc_exposure_grows_linearly_with_the_waves():
    plat, q = toy(), QLoop(0.5, 2.0, 128)
    a = predict(shape(seq_len=8192, batch=1, heads=64, sp=8, producers=64), q, plat)
    b = predict(shape(seq_len=16384, batch=1, heads=64, sp=8, producers=64), q, plat)
    assert b.remote_waves == 2 * a.remote_waves
    assert b.e_cc_us == pytest.approx(2 * a.e_cc_us)  # eq. 17: E_cc = N_t dt_cc, N_t ~ M
    assert a.e_cc_us == pytest.approx(a.remote_waves * drain_time_us(56 * 32768, 10.0))
    with_lat = predict(shape(seq_len=8192, batch=1, heads=64, sp=8, producers=64), q, plat, t_lat_us=1.5,
                       t_cover_us=0.5)
    assert with_lat.e_cc_us == pytest.approx(a.e_cc_us + a.remote_waves * 1.0)
    assert a.t_cc_us(100.0) == 100.0 + a.e_cc_us and a.t_fused_us(100.0) == 100.0 + a.e_res_us


def test_capacity_floor_and_cover_window():
    q = QLoop(10.0, 0.0, 128)
    s = shape(seq_len=8192, batch=1, heads=16, sp=8, producers=64)   # G >> V/R: only capacity can bind
    v_w = 56 * 32768
    small_q = predict(s, q, toy(capacity_bytes=64 * 16384))  # a CTA's share Q/K is half a tile: Q_w = V_w / 2
    assert small_q.e_drain_us == pytest.approx(small_q.remote_waves * (drain_time_us(v_w / 2, 10.0) - 1.0))
    p0, p1 = predict(s, QLoop(0.5, 0.0, 128), toy()), predict(s, QLoop(0.5, 0.0, 128), toy(), g_qk_us=3.0)
    assert p1.e_drain_us == pytest.approx(p0.e_drain_us - p0.remote_waves * 3.0)  # eq. 19


def test_drain_windows_span_local_only_waves():
    assert drain_windows([0, 5, 5, 0, 0, 5]) == [1, 3, 2]
    assert drain_windows([5]) == [1] and drain_windows([0, 5]) == [2]


def test_block_n_of_the_fit_must_match():
    with pytest.raises(ValueError, match="fitted for"):
        predict(shape(), QLoop(0.5, 0.0, 64), toy())


def test_the_qloop_spread_is_the_median_cv_of_the_points():
    from xsim.attention.qloop import fit_qloop
    from xsim.spread import P10_P90_SIGMAS, spread_cv

    assert spread_cv(9.0, 11.0, 10.0) == pytest.approx(2.0 / (P10_P90_SIGMAS * 10.0))
    assert spread_cv(1.0, 2.0, 0.0) != spread_cv(1.0, 2.0, 0.0)          # NaN without a mean
    q = fit_qloop([1024, 2048, 4096], [10.0, 18.0, 34.0], 128, [0.01, 0.03, float("nan")])
    assert q.cv == pytest.approx(0.02) and q.to_dict()["cv"] == q.cv
    assert fit_qloop([1024, 2048], [10.0, 18.0], 128).cv == 0.0
    with pytest.raises(ValueError, match='"cv"'):
        type(q)(1.0, 0.0, 128, cv=-0.1)
