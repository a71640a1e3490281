"""MegaMoE scheduling terms, eqs. 11–16. Times in microseconds."""

from __future__ import annotations

from xsim.closedform.burst_gap import pos
from xsim.units import drain_time_us


def wave_gap_us(t_l2_mma_us: float) -> float:
    """Eq. 12 (left): consecutive Linear-2 tiles give G_wave ~ T_L2^mma."""
    return t_l2_mma_us


def interleaved_gap_us(t_l2_mma_us: float, t_l1_mma_us: float, n1: int, n2: int) -> float:
    """Eq. 12 (right): G_int ~ T_L2^mma + (n1 / n2) T_L1^mma."""
    if n2 <= 0:
        raise ValueError(f'"n2" must be > 0, got {n2!r}')
    return t_l2_mma_us + n1 / n2 * t_l1_mma_us


def interleaved_overhead_us(delta_t_wave_us: float, t_l1_mma_us: float, n1: int, n2: int) -> float:
    """Eq. 13: dT_iss^int = [dT_iss^wave - (n1 / n2) T_L1^mma]+."""
    return pos(delta_t_wave_us - n1 / n2 * t_l1_mma_us)


def interleaving_sufficient(
    volume_bytes: float, t_iss0_us: float, t_l2_mma_us: float, t_l1_mma_us: float,
    n1: int, n2: int, drain_rate_gbps: float,
) -> bool:
    """Eq. 14: n2 V / (n2 T_iss0 + n2 T_L2 + n1 T_L1) <= R, i.e. G_int >= G*."""
    cycle_us = n2 * (t_iss0_us + t_l2_mma_us) + n1 * t_l1_mma_us
    return n2 * drain_time_us(volume_bytes, drain_rate_gbps) <= cycle_us


def critical_path_stall_us(t_rs_us: float, t_cover_us: float) -> float:
    """Eq. 15: dt = [T_RS - T_cover^mma]+."""
    return pos(t_rs_us - t_cover_us)


def d_knee_rows(b_n: int, k_sm: int, h_inter: int) -> float:
    """Eq. 16: anti-starvation lead D_knee = b_n K_SM / (2 h_inter), in scheduler rows."""
    if h_inter <= 0:
        raise ValueError(f'"h_inter" must be > 0, got {h_inter!r}')
    return b_n * k_sm / (2.0 * h_inter)
