"""FlashAttention + Ulysses All-to-All terms, eqs. 17–20. Times in microseconds."""

from __future__ import annotations

import math

from xsim.closedform.burst_gap import pos
from xsim.units import drain_time_us


def tile_bytes(b_m: int, d: int, s_out: int) -> int:
    """Per-tile output bytes B_t = b_m d s_out (Sec. 4.3)."""
    return b_m * d * s_out


def q_loop_gap_lower_us(seq_len: int, b_n: int, sigma_us: float) -> float:
    """Conservative Q-loop gap G_Qloop(M) >= sigma M / b_n (fixed component dropped)."""
    return sigma_us * seq_len / b_n


def kv_tiles(seq_len: int, b_n: int) -> int:
    """KV tiles one output tile visits: ceil(M / b_n)."""
    return math.ceil(seq_len / b_n)


def q_loop_gap_us(seq_len: int, b_n: int, sigma_us: float, fixed_us: float) -> float:
    """The Q-loop gap with its fixed part: G_Qloop(M) = fixed + sigma ceil(M / b_n) (Sec. 4.3)."""
    return fixed_us + sigma_us * kv_tiles(seq_len, b_n)


def g_star_us(volume_bytes: float, drain_rate_gbps: float, t_iss0_us: float) -> float:
    """Eq. 20 (right), the recovery gap of an aligned output burst: G* = [V/R - T_iss0]+."""
    return pos(drain_time_us(volume_bytes, drain_rate_gbps) - t_iss0_us)


def m_ub_star(b_n: int, g_star_us: float, sigma_us: float) -> float:
    """Eq. 20: M_ub* = b_n G* / sigma, tokens."""
    if sigma_us <= 0:
        raise ValueError(f'"sigma_us" must be > 0, got {sigma_us!r}')
    return b_n * g_star_us / sigma_us


def cc_exposure_us(volume_bytes: float, drain_rate_gbps: float, t_lat_us: float, t_cover_us: float) -> float:
    """Eq. 17: completion-coupled exposure per aligned burst, [V/R + T_lat - T_cover]+."""
    return pos(drain_time_us(volume_bytes, drain_rate_gbps) + t_lat_us - t_cover_us)


def backpressure_us(volume_bytes: float, drain_rate_gbps: float, g_qloop_us: float, t_iss0_us: float) -> float:
    """Eq. 18: X-Stage issue-side backpressure [V/R - G_Qloop(M) - T_iss0]+."""
    return pos(drain_time_us(volume_bytes, drain_rate_gbps) - g_qloop_us - t_iss0_us)


def critical_backpressure_us(delta_t_us: float, g_qk_us: float) -> float:
    """Eq. 19: what reaches the compute critical path, [dt(M) - G_QK]+."""
    return pos(delta_t_us - g_qk_us)


def total_exposure_us(bursts: int, per_burst_us: float) -> float:
    """E = N_t * dt: the total over output-burst waves (E_cc or E_drain)."""
    return bursts * per_burst_us
