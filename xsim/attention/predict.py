"""Closed-form predictions for one FA + A2A point (Sec. 4.3, eqs. 17-20), from a platform and
the fitted Q-loop gap; no refitting to the application.

The kernel runs its tiles in waves of K concurrent CTAs (equal Q-loops keep them in phase), so
wave w is one aligned burst of V_w bytes (its remote tiles), followed by the next tile's full
Q-loop G = G_Qloop(M) (times the waves until the next burst, where waves of local tiles only lie
between: their Q-loops drain it too). Per wave with bytes:

- E_issue: the backpressure-free issue T_iss0(K, B_t) on the issuing CTA (our kernel has no
  separate communication role, so it is on the critical path);
- E_drain: eq. 18 with the capacity floor of :func:`~xsim.closedform.steady_state`,
  dt = T_iss - T_iss0 = [V_w/R - G - T_iss0]+ (or [(V_w - Q_w)/R - T_iss0]+), less the cover
  window G_QK (eq. 19; 0 for a kernel whose one role computes and stores). The capacity is
  per SM (Q(K) is affine in K, docs/calibration.md; the DES gives each producer Q(K)/K), so a
  wave whose K_w of K CTAs send has Q_w = Q(K) K_w / K: with K_w = K this is the paper's
  (V - Q)/R, and a tile above a CTA's share Q(K)/K pays it at every M;
- E_cc: eq. 17, the completion-coupled counterfactual: the issuer waits for remote visibility,
  [max(V_w/R, T_iss0) + T_lat - T_cover]+ per wave.

``T_fused = T_FA + E_issue + E_drain`` and ``T_cc = T_FA + E_cc``, T_FA the measured FA-only
time (the compute side is measured, as in the paper's Fig. 11). Back-to-back replay makes
every wave's burst, the last one's included, drain during a following Q-loop.
G* and M_ub* (eq. 20) are the paper's conservative worst case: all K CTAs aligned and remote.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from xsim.attention.qloop import QLoop
from xsim.attention.shape import AttentionShape, drain_peers
from xsim.closedform import steady_state
from xsim.closedform.burst_gap import pos
from xsim.closedform.fa_a2a import cc_exposure_us, critical_backpressure_us, g_star_us, m_ub_star
from xsim.platform import Platform
from xsim.units import gbps_to_bytes_per_us


@dataclass(frozen=True)
class FaA2aPrediction:
    g_qloop_us: float          # G_Qloop(M) with its fixed part
    g_star_us: float           # eq. 20 (right), worst aligned case V = K B_t
    m_ub_star_tokens: float    # eq. 20: b_n G* / sigma
    waves: int
    remote_waves: int          # waves with at least one remote tile
    t_iss0_us: float           # T_iss0(K, B_t)
    drain_rate_gbps: float
    capacity_bytes: float
    max_wave_bytes: float
    e_issue_us: float
    e_drain_us: float
    e_cc_us: float
    t_fa_model_us: float       # waves x G_Qloop: the modeled FA-only time (what the DES runs)

    @property
    def e_res_us(self) -> float:
        """The predicted sender-visible residual T_fused - T_FA."""
        return self.e_issue_us + self.e_drain_us

    def t_fused_us(self, t_fa_us: float) -> float:
        return t_fa_us + self.e_res_us

    def t_cc_us(self, t_fa_us: float) -> float:
        return t_fa_us + self.e_cc_us

    def to_dict(self) -> dict:
        return {**asdict(self), "e_res_us": self.e_res_us}


def drain_windows(volumes) -> list[int]:
    """For each wave with bytes, the Q-loops until the next wave with bytes (cyclic: replays
    follow back to back), i.e. how many gaps its burst has to drain in."""
    remote = [w for w, v in enumerate(volumes) if v > 0]
    return [((remote[(i + 1) % len(remote)] - w - 1) % len(volumes)) + 1 for i, w in enumerate(remote)]


def predict(shape: AttentionShape, qloop: QLoop, platform: Platform, destination: str = "host",
            g_qk_us: float = 0.0, t_lat_us: float = 0.0, t_cover_us: float = 0.0) -> FaA2aPrediction:
    """Eqs. 17-20 for one point. Args: the rank's problem, the fitted Q-loop, the platform,
    where the remote tiles go ("host": one link; "peer": N - 1 links), the cover window G_QK,
    the completion latency T_lat and the cover T_cover of eq. 17 (microseconds)."""
    if qloop.block_n != shape.block_n:
        raise ValueError(f'the Q-loop was fitted for "block_n" {qloop.block_n}, the shape has {shape.block_n}.')
    k, b_t = shape.programs, float(shape.tile_bytes)
    rate = platform.effective_drain_rate_gbps(drain_peers(destination, shape.sp))
    cap = platform.capacity_bytes(k)
    t0 = platform.t_iss0_us(k, b_t)
    gap = qloop.gap_us(shape.seq_len)
    e_issue = e_drain = e_cc = 0.0
    volumes, senders = shape.wave_bytes(), shape.wave_remote_tiles()
    for v, k_w, windows in zip(volumes[volumes > 0], senders[volumes > 0], drain_windows(volumes)):
        dt = steady_state(v, windows * gap, t0, rate, cap * k_w / k).delta_t_issue_us
        e_issue += t0
        e_drain += critical_backpressure_us(dt, g_qk_us)
        e_cc += max(cc_exposure_us(v, rate, t_lat_us, t_cover_us), pos(t0 + t_lat_us - t_cover_us))
    g_star = g_star_us(k * b_t, rate, t0)
    return FaA2aPrediction(
        g_qloop_us=gap, g_star_us=g_star,
        m_ub_star_tokens=m_ub_star(shape.block_n, g_star, qloop.sigma_us_per_kv_tile),
        waves=shape.waves, remote_waves=int((volumes > 0).sum()), t_iss0_us=t0, drain_rate_gbps=rate,
        capacity_bytes=cap, max_wave_bytes=float(volumes.max(initial=0.0)),
        e_issue_us=float(e_issue), e_drain_us=float(e_drain), e_cc_us=float(e_cc), t_fa_model_us=shape.waves * gap)


def paced_residual_us(shape: AttentionShape, qloop: QLoop, platform: Platform, pace: int,
                      destination: str = "host") -> float:
    """The fused-paced kernel's residual: each wave's V_w leaves in ``pace`` chunks spread over the
    Q-loops until the next wave's bytes, so no CTA holds more than a chunk and the capacity term
    of eq. 18 never binds. Per wave with bytes: ``pace`` chunk issues T_iss0(K, B_t / pace) on the
    issuing CTA, plus the rate term [V_w/R - windows G]+."""
    rate = platform.effective_drain_rate_gbps(drain_peers(destination, shape.sp))
    gap = qloop.gap_us(shape.seq_len)
    t0 = platform.t_iss0_us(shape.programs, shape.tile_bytes / pace)
    volumes = shape.wave_bytes()
    return float(sum(pace * t0 + pos(v / gbps_to_bytes_per_us(rate) - windows * gap)
                     for v, windows in zip(volumes[volumes > 0], drain_windows(volumes))))
