"""The microbenchmark's tiles: per (CTA p, burst j) a block of tiles, and how the blocks form streams.

A block is, in stream order (``roles``):

- ``burst``: the burst's remote bytes. Aligned bursts j > 0 wait for barrier j - 1.
- ``gap``: a mainloop of the gap plus the loop cost plus, when aligned, the barrier latency (it
  overlaps the drain's tail: the arrival is ``max(gap end + latency, drain end)``).
- ``barrier`` (only with ``barrier_fence``): a barrier that fences before it arrives
  (``__threadfence()`` then the arrival atomic, as cooperative-groups grid sync does): the gap
  tile signals the CTA's own counter at its drain end, and this tile waits for it, runs the
  barrier latency, and then arrives. Its zero-gap aligned period is ``V/R + latency``.

Streams: one per CTA (blocks j = 0..n-1), or with the per-burst arbitration spread one per
(CTA, burst) (:func:`spread_layout`).
"""

from __future__ import annotations

import numpy as np

from xsim.platform import Platform


def spread_layout(params: dict, platform: Platform) -> bool:
    """True when every (CTA, burst) is its own DES producer, so that the platform's per-burst
    arbitration spread can draw new weights for each burst. Only aligned bursts that wait for the
    drain qualify: nothing is carried from one burst to the next, and one X-Stage of capacity
    n Q(K) shared by K n producers gives each of them Q(K)/K, as in the per-CTA layout."""
    arb = platform.arbitration
    waits = params["barrier_waits_drain"] or params["barrier_fence"]
    return bool(params["aligned"] and waits and params["burst_spread"] and arb is not None and arb.burst_sigma > 0)


def roles(params: dict, platform: Platform) -> tuple[str, ...]:
    fence = bool(params["aligned"] and params["barrier_fence"])
    return ("burst", "gap") + (("barrier",) if fence else ())


def blocks(params: dict, platform: Platform, t_iss0_us: float) -> tuple[tuple[str, ...], dict]:
    """(roles, per-tile arrays [K, n, m] for m roles), in block order."""
    k, n, b = params["producers"], params["bursts"], float(params["burst_bytes"])
    aligned = params["aligned"]
    names = roles(params, platform)
    m = len(names)
    j = np.broadcast_to(np.arange(n)[None, :, None], (k, n, m))
    p = np.broadcast_to(np.arange(k)[:, None, None], (k, n, m))
    t = np.broadcast_to(np.arange(m)[None, None, :], (k, n, m))
    role = np.asarray(names)[t]
    is_burst, is_gap, is_fence = (role == r for r in ("burst", "gap", "barrier"))
    fence = "barrier" in names
    latency = platform.barrier_us(params["gap_us"]) if aligned else 0.0
    gap = params["gap_us"] + platform.burst_overhead_us + (0.0 if fence else latency)
    own = n + p * n + j                      # fence mode: the gap tile's drain -> its fence tile
    arrives = is_fence if fence else is_gap
    waits_barrier = aligned & is_burst & (j > 0)
    return names, {
        "kind": t.astype(np.int64),
        "mainloop_us": np.select([is_gap, is_fence], [gap, latency], 0.0),
        "bytes": np.where(is_burst, b, 0.0),
        "t_iss0_us": np.full((k, n, m), t_iss0_us),
        "wait_counter": np.select([waits_barrier, is_fence], [j - 1, own], -1).astype(np.int64),
        "wait_value": np.select([waits_barrier, is_fence], [k, 1], 0).astype(np.int64),
        "signal_counter": np.select([aligned & arrives, fence & is_gap], [j, own], -1).astype(np.int64),
        "signal_on_drain": is_gap & (fence | (aligned & params["barrier_waits_drain"])),
        "burst_index": j.astype(np.int64),
    }


def counters(params: dict, names: tuple[str, ...]) -> int:
    if not params["aligned"]:
        return 0
    n = params["bursts"]
    return n + (params["producers"] * n if "barrier" in names else 0)


def per_burst(result, params: dict) -> tuple[np.ndarray, np.ndarray]:
    """(start_us, end_us) [K, n] of every (CTA, burst) in the per-(CTA, burst) layout (or the plain one)."""
    w = result.workload
    k, n = params["producers"], params["bursts"]
    names = w.kind_names
    first = np.flatnonzero(w.kind == names.index("burst"))
    cta = w.producer[first] % k
    order = np.lexsort((w.burst_index[first], cta))      # CTA-major, then burst index
    start = result.times.issue_start[first][order].reshape(k, n)
    end = result.times.issue_end[first][order].reshape(k, n)
    return start, end


def is_plain(result, params: dict) -> bool:
    """One stream per CTA (the SimResult's own statistics apply)."""
    return result.workload.n_producers == params["producers"]
