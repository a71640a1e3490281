"""The paper's remote-store microbenchmarks (Sec. 3.1) as tile streams.

K producers each issue ``bursts`` bursts of ``burst_bytes``, separated by a producer-side
``gap_us`` with no remote stores. Each producer's stream is burst 0, gap 0, burst 1, gap 1, ...:
a *burst tile* (its remote bytes) then a *gap tile* (a mainloop of ``gap_us`` plus the
platform's per-burst loop bookkeeping ``burst_overhead_us``, no bytes).

- ``periodic``: bursts follow each other with the gap between them (Sec. 3.1 periodic mode).
- ``isolated``: each burst starts only after the previous one has fully drained, then the gap
  (the completion-coupled issuer: every burst meets an empty X-Stage, eq. 7).
- ``aligned = true``: a grid barrier before every burst. A producer arrives after its gap,
  and not before its burst's stores have drained: on the hardware the barrier's atomic waits
  behind the stores still in the SM's memory path (docs/hardware.md), so an aligned burst
  always meets an empty X-Stage. Burst j + 1 starts once all K producers have arrived
  (counter j reaches K). The barrier's own latency (``grid_barrier_us``) runs after the gap
  and overlaps the drain's tail (the hardware's aligned zero-gap period is V/R, not
  V/R + latency): a producer arrives at the later of gap end + latency and its drain end.
  With ``barrier_waits_drain = false`` it arrives at gap end + latency.
- ``barrier_fence = true``: the barrier fences before it arrives (``__threadfence()`` then the
  arrival atomic, as cooperative-groups grid sync does): a producer arrives its latency after
  its stores have drained, so the zero-gap aligned period is V/R + latency.
- Producers share the drain by the platform's arbitration weights when the X-Stage is full
  (by the SM each CTA runs on, ``xsim.arbitration``); unequal weights make free-running
  producers drift out of phase, as on the hardware. With the platform's per-burst spread
  (``burst_spread``, aligned bursts that wait for the drain) every (CTA, burst) is its own DES
  producer with weight ``w_SM * f[p, j]`` (``xsim.builders._microbench_layout``).
- ``threads``: threads per CTA for the profile's threads-per-CTA term of T_iss0 (0: reference).
- Free-running past the closed form's G* (``drained_share``) a CTA's capacity share is
  max(Q(K)/K, B): the X-Stage drains within a period, and the knee's share binds only when every
  CTA holds stores at once (:func:`_free_share_factor`).
- Free-running bursts issue in the profile's ``free_running_factor`` x T_iss0 when it has one
  (``IssueModel``: out of phase, over NVLink a CTA issues 8-13 % faster than when all start at once).
- The X-Stage drains at the profile's R(K) for the K producers (``Platform.drain_rate_for``: with
  ``drain_half_producers``, fewer CTAs keep fewer stores in flight and drain slower).
"""

from __future__ import annotations

import numpy as np

from xsim.closedform import steady_state
from xsim.closedform.burst_gap import isolated_burst
from xsim.builders import _microbench_layout as layout
from xsim.params import Param
from xsim.platform import Platform
from xsim.stats import Stats
from xsim.units import KIB, gbps_to_bytes_per_us
from xsim.workload import COUPLINGS, Workload, XStageParams

PARAMS = {
    "mode": Param("str", "periodic", "periodic bursts or isolated bursts", choices=("periodic", "isolated")),
    "producers": Param("int", 132, "concurrent producer CTAs K", minimum=1, maximum=100_000),
    "burst_bytes": Param("bytes", 32 * KIB, "bytes per producer per burst B", minimum=0, exclusive_min=True),
    "gap_us": Param("us", 0.0, "producer-side gap G between bursts", minimum=0),
    "bursts": Param("int", 200, "bursts per producer", minimum=1, maximum=10_000_000),
    "warmup_bursts": Param("int", 50, "leading bursts left out of the statistics", minimum=0),
    "aligned": Param("bool", True, "grid barrier before every burst"),
    "barrier_waits_drain": Param("bool", True, "a producer arrives at the barrier once its stores have drained"),
    "staging_depth": Param("int", 0, "staging slots S (0: the producer issues its own stores)", minimum=0),
    "coupling": Param("str", "xstage", "when a staging slot frees", choices=COUPLINGS),
    "peers": Param("int", 1, "destination GPUs the burst is spread over evenly", minimum=1),
    "barrier_fence": Param("bool", False, "the barrier fences before it arrives (__threadfence() then the "
                           "arrival atomic): a producer arrives its latency after its stores have drained"),
    "burst_spread": Param("bool", True, "draw the platform's per-burst arbitration spread for every aligned burst"),
    "drained_share": Param("bool", True, "free-running past the closed form's G* (the X-Stage drains within a "
                           "period): a CTA's capacity share is max(Q(K)/K, B), so no burst waits for its own share"),
    "free_capacity": Param("float", 1.0, "free-running: each CTA's capacity share is this times Q(K)/K (a probe "
                           "of out-of-phase CTAs holding more than the all-at-once knee's share)", minimum=0,
                           exclusive_min=True),
    "threads": Param("int", 0, "threads per producer CTA (0: the profile's reference count)", minimum=0),
}


def _validate(params: dict) -> None:
    if params["warmup_bursts"] >= params["bursts"]:
        raise ValueError(f'"warmup_bursts" ({params["warmup_bursts"]}) must be < "bursts" ({params["bursts"]})')


def size(params: dict, platform: Platform) -> tuple[int, float]:
    """Tiles of the workload and an upper bound of its simulated time (before building it).

    A burst takes at most its issue time plus its drain (V / R) plus the gap, the loop's
    bookkeeping and the barrier; the run is ``bursts`` of them."""
    _validate(params)
    k, n, b = params["producers"], params["bursts"], float(params["burst_bytes"])
    drain_us = k * b / gbps_to_bytes_per_us(platform.effective_drain_rate_gbps(params["peers"], k))
    per_burst_us = (platform.t_iss0_us(k, b) + drain_us + params["gap_us"] + platform.burst_overhead_us
                    + platform.grid_barrier_us)
    return 2 * k * n, n * per_burst_us


def _free_share_factor(params: dict, platform: Platform) -> float:
    """Factor on a free-running CTA's capacity share Q(K)/K: ``free_capacity`` (a probe, default 1),
    and past G* (``drained_share``) at least B / (Q(K)/K). Past G* the X-Stage drains within every
    period and the CTAs' phases are spread (the host traces: start spread 55-76 us of a 165 us
    period, every burst at the T_iss0 floor although B = 32 KiB > Q(132)/132 = 30.3 kB): a CTA
    is bounded by the knee's share only when all K hold stores at once (the knee's condition), so
    there no burst waits for its own share (the closed form, which has no phases, still gives
    max(T_iss0, (V - Q)/R) there)."""
    k, b = params["producers"], float(params["burst_bytes"])
    factor = params["free_capacity"]
    if params["drained_share"] and params["gap_us"] >= predict(params, platform)["g_star_us"]:
        factor = max(factor, b * k / platform.capacity_bytes(k))
    return factor


def build(params: dict, platform: Platform) -> Workload:
    _validate(params)
    k, n, b = params["producers"], params["bursts"], float(params["burst_bytes"])
    isolated = params["mode"] == "isolated"
    spread = layout.spread_layout(params, platform)
    t_iss0_us = platform.t_iss0_us(k, b, params["threads"] or None)
    factor = platform.issue.free_running_factor
    if factor is not None and not isolated and not params["aligned"]:
        t_iss0_us *= factor                # free-running CTAs issue out of phase (IssueModel)
    names, arrays = layout.blocks(params, platform, t_iss0_us)
    m = len(names)
    if spread:  # producer v = j K + p is CTA p's burst j
        arrays = {name: np.ascontiguousarray(a.transpose(1, 0, 2)).ravel() for name, a in arrays.items()}
    else:
        arrays = {name: a.ravel() for name, a in arrays.items()}
    weights = np.asarray(platform.weights_for(k), dtype=float)
    capacity = None
    if spread:
        backlog = b - platform.capacity_bytes(k) / k
        weights = (weights[:, None] * platform.arbitration.burst_factors(k, n, backlog)).T.ravel()
        factors = platform.arbitration.capacity_factors(k, n)
        capacity = None if factors is None else factors.T.ravel()
    free_cap = _free_share_factor(params, platform) if not isolated and not params["aligned"] else 1.0
    streams, per_stream = (k * n, m) if spread else (k, n * m)
    n_tiles = k * n * m
    return Workload(
        offsets=np.arange(0, n_tiles + 1, per_stream, dtype=np.int64),
        producer_gpu=np.zeros(streams, dtype=np.int64),
        kind_names=names,
        epilogue_us=np.zeros(n_tiles),
        release_us=np.zeros(n_tiles),
        n_counters=layout.counters(params, names),
        xstages=(XStageParams(gbps_to_bytes_per_us(platform.effective_drain_rate_gbps(params["peers"], k)),
                              platform.capacity_bytes(k) * (n if spread else 1) * free_cap),),
        staging_depth=1 if isolated else params["staging_depth"],
        coupling="completion-coupled" if isolated else params["coupling"],
        producer_weight=weights,
        producer_capacity=capacity,
        **arrays,
    )


def predict(params: dict, platform: Platform) -> dict:
    """The closed form for the same point: eqs. 3–7 (and the completion-coupled period)."""
    k, b = params["producers"], float(params["burst_bytes"])
    volume = k * b
    t0 = platform.t_iss0_us(k, b)
    r = platform.effective_drain_rate_gbps(params["peers"], k)
    q = platform.capacity_bytes(k)
    iso = isolated_burst(volume, t0, r, q)
    if params["mode"] == "isolated":
        return {"issue_us": iso.t_issue_isolated_us, "q_peak_bytes": iso.q_peak_bytes}
    ss = steady_state(volume, params["gap_us"], t0, r, q)
    coupled = params["coupling"] == "completion-coupled"
    return {"issue_us": ss.t_issue_us, "period_us": ss.t_period_cc_us if coupled else ss.t_period_us,
            "g_star_us": ss.g_star_us}


def issue_max_samples(result, warmup_bursts: int, params: dict | None = None) -> np.ndarray:
    """Per burst after the warm-up: the longest producer's issue span (the slowest CTA), us."""
    w = result.workload
    if params is not None and not layout.is_plain(result, params):
        start, end = layout.per_burst(result, params)
        return (end - start)[:, warmup_bursts:].max(axis=0) if start.shape[1] > warmup_bursts else np.zeros(0)
    keep = (w.bytes > 0) & (w.burst_index >= warmup_bursts)
    if not keep.any():
        return np.zeros(0)
    idx = w.burst_index[keep]
    out = np.full(int(idx.max()) + 1, -np.inf)
    np.maximum.at(out, idx, result.issue_us[keep])
    return out[np.isfinite(out)]


def summarize(result, params: dict) -> dict:
    warm = params["warmup_bursts"]
    if layout.is_plain(result, params):
        period, issue = result.period_stats(warm), result.issue_stats(warm)
    else:
        start, end = layout.per_burst(result, params)
        period = Stats.of(np.diff(start, axis=1)[:, max(warm - 1, 0):].ravel())
        issue = Stats.of((end - start)[:, warm:].ravel())
    return {
        "period_us": period.to_dict(),
        "issue_us": issue.to_dict(),
        "issue_max_us": Stats.of(issue_max_samples(result, warm, params)).to_dict(),
        "burst_issue_us": result.burst_issue_stats(warm).to_dict(),
        "stall_us": result.stall_stats().to_dict(),
        "makespan_us": result.makespan_us,
    }
