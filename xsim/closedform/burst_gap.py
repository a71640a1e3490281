"""Burst–Gap model, eqs. 1–10. Times in microseconds, volumes in bytes, R in GB/s."""

from __future__ import annotations

from dataclasses import dataclass

from xsim.units import bytes_per_us_to_gbps, drain_time_us, gbps_to_bytes_per_us


def pos(x: float) -> float:
    """[x]+ = max(x, 0)."""
    return x if x > 0.0 else 0.0


@dataclass(frozen=True)
class SteadyState:
    """Periodic bursts of volume V separated by a producer-side gap G, in steady state."""

    t_issue_us: float        # eq. 3: max(T_iss0, V/R - G)  (and the capacity floor, see below)
    t_period_us: float       # eq. 2 with eq. 3: T_iss + G = max(T_iss0 + G, V/R)
    delta_t_issue_us: float  # eq. 4: [V/R - G - T_iss0]+
    g_star_us: float         # eq. 5: [V/R - T_iss0]+
    t_period_cc_us: float    # completion-coupled counterfactual (Sec. 3.4): G + V/R
    drain_limited: bool      # True on the V/R plateau (G < G*)


def steady_state(
    volume_bytes: float,
    gap_us: float,
    t_iss0_us: float,
    drain_rate_gbps: float,
    capacity_bytes: float | None = None,
) -> SteadyState:
    """Eqs. 1–5.

    The paper's eq. 3 assumes the capacity never empties during a gap (R*G <= Q). With a
    capacity given, the exact steady state of the same fluid model is used instead:
    ``T_iss = max(T_iss0, V/R - G, (V - Q)/R)``, which equals eq. 3 whenever R*G <= Q and
    otherwise says that a gap longer than Q/R cannot help a burst that overflows Q by itself.
    """
    v_over_r = drain_time_us(volume_bytes, drain_rate_gbps)
    t_issue = max(t_iss0_us, v_over_r - gap_us)
    if capacity_bytes is not None:
        t_issue = max(t_issue, drain_time_us(volume_bytes - capacity_bytes, drain_rate_gbps))
    return SteadyState(
        t_issue_us=t_issue,
        t_period_us=t_issue + gap_us,
        delta_t_issue_us=t_issue - t_iss0_us,
        g_star_us=pos(v_over_r - t_iss0_us),
        t_period_cc_us=gap_us + v_over_r,
        drain_limited=v_over_r - gap_us > t_iss0_us,
    )


@dataclass(frozen=True)
class IsolatedBurst:
    """One burst into an empty X-Stage."""

    q_peak_bytes: float          # eq. 6: [V - R T_iss0]+ (no capacity limit)
    t_issue_isolated_us: float   # eq. 7: max(T_iss0, (V - Q)/R)
    capacity_limited: bool       # q_peak > Q


def isolated_burst(
    volume_bytes: float, t_iss0_us: float, drain_rate_gbps: float, capacity_bytes: float
) -> IsolatedBurst:
    """Eqs. 6–7."""
    q_peak = pos(volume_bytes - gbps_to_bytes_per_us(drain_rate_gbps) * t_iss0_us)
    t_iso = max(t_iss0_us, drain_time_us(volume_bytes - capacity_bytes, drain_rate_gbps))
    return IsolatedBurst(q_peak, t_iso, q_peak > capacity_bytes)


@dataclass(frozen=True)
class DesignTest:
    """Eq. 10: no modeled backpressure iff both bounds hold."""

    injection_rate_gbps: float   # V / (T_iss0 + G)
    rate_bound_ok: bool          # V / (T_iss0 + G) <= R
    q_peak_bytes: float          # [V - R T_iss0]+
    capacity_bound_ok: bool      # [V - R T_iss0]+ <= Q

    @property
    def ok(self) -> bool:
        return self.rate_bound_ok and self.capacity_bound_ok


def design_test(
    volume_bytes: float,
    gap_us: float,
    t_iss0_us: float,
    drain_rate_gbps: float,
    capacity_bytes: float,
) -> DesignTest:
    """Eq. 10, the two bounds of the X-Stage design test."""
    rate = bytes_per_us_to_gbps(volume_bytes / (t_iss0_us + gap_us))
    q_peak = isolated_burst(volume_bytes, t_iss0_us, drain_rate_gbps, capacity_bytes).q_peak_bytes
    return DesignTest(rate, rate <= drain_rate_gbps, q_peak, q_peak <= capacity_bytes)
