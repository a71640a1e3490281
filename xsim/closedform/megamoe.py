"""MegaMoE scheduling terms, eqs. 11–16. Times in microseconds."""

from __future__ import annotations

from dataclasses import dataclass

from xsim.closedform.burst_gap import isolated_burst, pos, steady_state
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


@dataclass(frozen=True)
class ScheduleSpans:
    """Closed-form Linear-2 span and stall of both schedules (eqs. 11-15), one config."""

    g_wave_us: float              # eq. 12 left
    g_int_us: float               # eq. 12 right
    span_wave_us: float           # T_RS ~ T_iss0 + dT_iss with G = G_wave (eqs. 3, 11)
    span_int_us: float            # the same with G = G_int (eq. 13)
    stall_wave_us: float          # eq. 15 with T_cover = the next Linear-2 mainloop
    stall_int_us: float           # eq. 15 with T_cover = the inserted Linear-1 mainloop
    eq14_wave_ok: bool            # the rate bound with the wave gap alone
    eq14_int_ok: bool             # eq. 14: interleaving is sufficient


def schedule_spans(volume_bytes: float, t_iss0_us: float, t_l2_mma_us: float, t_l1_mma_us: float,
                   n1: int, n2: int, drain_rate_gbps: float, capacity_bytes: float | None = None,
                   covered: bool = True) -> ScheduleSpans:
    """Spans and stalls of both schedules from the aggregate burst ``V = K_act V_t``.

    ``covered`` (staging depth >= 2, a separate epilogue role): the issuer never idles for the
    gap; where the schedule injects faster than R (its rate bound fails) it is backlogged and
    every span is the drain-limited period V / R (Sec. 5.2.3: "an aggregate span near
    K_act V_t / R"), else a burst meets a drained X-Stage (eq. 7). The next mainloop covers
    the span (eq. 15). Not covered (S <= 1, the compute role issues its own stores): the gap
    is idle for the issuer, ``T_RS = max(T_iss0, V/R - G)`` (eqs. 3, 11, 13), and nothing
    covers the span.
    """
    g_wave, g_int = wave_gap_us(t_l2_mma_us), interleaved_gap_us(t_l2_mma_us, t_l1_mma_us, n1, n2)
    wave_ok = interleaving_sufficient(volume_bytes, t_iss0_us, t_l2_mma_us, 0.0, 0, 1, drain_rate_gbps)
    int_ok = interleaving_sufficient(volume_bytes, t_iss0_us, t_l2_mma_us, t_l1_mma_us, n1, n2, drain_rate_gbps)
    if covered:
        span_wave = _decoupled_span_us(volume_bytes, t_iss0_us, drain_rate_gbps, capacity_bytes, not wave_ok)
        span_int = _decoupled_span_us(volume_bytes, t_iss0_us, drain_rate_gbps, capacity_bytes, not int_ok)
        cover_wave, cover_int = t_l2_mma_us, t_l1_mma_us
    else:
        span_wave = steady_state(volume_bytes, g_wave, t_iss0_us, drain_rate_gbps, capacity_bytes).t_issue_us
        span_int = steady_state(volume_bytes, g_int, t_iss0_us, drain_rate_gbps, capacity_bytes).t_issue_us
        cover_wave = cover_int = 0.0
    return ScheduleSpans(
        g_wave_us=g_wave, g_int_us=g_int, span_wave_us=span_wave, span_int_us=span_int,
        stall_wave_us=critical_path_stall_us(span_wave, cover_wave),
        stall_int_us=critical_path_stall_us(span_int, cover_int),
        eq14_wave_ok=wave_ok, eq14_int_ok=int_ok,
    )


def _decoupled_span_us(volume_bytes, t_iss0_us, drain_rate_gbps, capacity_bytes, backlogged: bool) -> float:
    if backlogged:
        return max(t_iss0_us, drain_time_us(volume_bytes, drain_rate_gbps))
    if capacity_bytes is None:
        return t_iss0_us
    return isolated_burst(volume_bytes, t_iss0_us, drain_rate_gbps, capacity_bytes).t_issue_isolated_us
