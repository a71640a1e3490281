"""The acceptance-order X-Stage with a shared credit pool: an exact event-driven fluid of one stage (reference).

The discipline (issue 8; a hybrid of :mod:`xsim.des.fifo_drain` and the engines' weights):

- **one FIFO per source GPU**, as in :mod:`xsim.des.fifo_drain`: the link drains the accepted
  bytes of all producers in acceptance order at R (segments of constant acceptance mix; producer
  i drains at ``R * frac_i(head)``). The drain has no weights.
- **a shared pool of credits** ``pool`` (Q(K)): the outstanding bytes of all producers,
  ``sum q_i``, never exceed it, where ``q_i = accepted_i - drained_i``.
- **a per-producer limit** ``limit_i`` (``alpha * Q(K)/K``): ``q_i`` never exceeds it; at
  ``q_i = limit_i`` producer i is accepted only as fast as its own bytes drain
  (ceiling ``c_i = min(r_i, d_i)``), else its ceiling is its issue rate ``c_i = r_i``.
- **weighted credit return.** While the pool is not full, every producer is accepted at its
  ceiling. Once it is full, the credits the link frees (R per us) go back to the producers that
  are waiting, in proportion to their arbitration weights ``w_i``, each capped at its ceiling:
  ``a_i = min(c_i, theta * w_i)`` with ``sum a_i = R`` (a water-fill). When the ceilings sum to
  less than R the pool stops being full. So who issues next is weighted; the link still drains
  in the order it accepted.
- **pass-through** while the FIFO is empty and ``sum a <= R``.

With ``alpha = 1`` (``limit_i = pool / K`` for K producers) the pool can be full only when every
producer is at its limit, where every ceiling is already its own drain: the discipline is
:mod:`xsim.des.fifo_drain`'s per-producer credits exactly, and the weights play no part. With
``limit_i >= pool`` there is no per-producer limit.

Events (between them every quantity is linear in t): a start, an issue end, a ``q_i`` reaching
its limit, ``sum q`` reaching the pool, the head segment emptying, the FIFO emptying. Not wired
into the engines; the tool that measures the discipline on isolated bursts
(benchmarks/fifo_pool_errors.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xsim.des.fifo_drain import TOL_BYTES, TOL_US, _check, _Fifo
from xsim.des.fifo_drain import _next_dt as _drain_next_dt


@dataclass(frozen=True)
class PoolResult:
    """Per producer: the time its last byte was accepted (issue end) and drained (us); the largest
    outstanding bytes seen, per producer and summed (for the invariants)."""

    issue_end_us: np.ndarray
    drained_us: np.ndarray
    peak_q_bytes: np.ndarray
    peak_pool_bytes: float
    events: int


def water_fill(ceiling: np.ndarray, weight: np.ndarray, total: float) -> np.ndarray:
    """``a_i = min(ceiling_i, theta * weight_i)`` with ``sum a = total``; every ceiling when they sum
    to at most ``total``."""
    if ceiling.sum() <= total:
        return ceiling.copy()
    a = np.zeros_like(ceiling)
    live = ceiling > 0.0
    left = total
    for k in np.argsort(np.where(live, ceiling / weight, np.inf), kind="stable"):
        if not live[k]:
            break
        theta = left / weight[live].sum()
        if ceiling[k] <= theta * weight[k]:
            a[k], left, live[k] = ceiling[k], left - ceiling[k], False
        else:
            a[live] = theta * weight[live]
            break
    return a


def _check_pool(weight, limit, pool):
    if np.any(weight <= 0.0):
        raise ValueError('"weight" must be > 0.')
    if np.any(limit <= 0.0):
        raise ValueError('"limit" must be > 0.')
    if not pool > 0.0:
        raise ValueError('"pool" must be > 0.')


class _State:
    """Per-producer flags: at its limit (``capped``), and the pool being full."""

    def __init__(self, n):
        self.capped = np.zeros(n, bool)
        self.full = False


def simulate(start_us, nbytes, rate, weight, limit, pool, drain, max_events: int = 10_000_000) -> PoolResult:
    """One stage, each producer issuing one tile of ``nbytes[i]`` at ``rate[i]`` (bytes/us) from
    ``start_us[i]``, arbitration weight ``weight[i]``, at most ``limit[i]`` bytes outstanding, at most
    ``pool`` bytes outstanding in all; the link drains at ``drain`` bytes/us in acceptance order."""
    start_us, nbytes, rate, weight, limit = (np.asarray(a, dtype=float)
                                             for a in (start_us, nbytes, rate, weight, limit))
    _check_pool(weight, limit, pool)
    _check(start_us, nbytes, rate, limit, drain)
    n = len(nbytes)
    acc, drn = np.zeros(n), np.zeros(n)
    issue_end, drained_at = np.full(n, np.nan), np.full(n, np.nan)
    peak_q, peak_pool = np.zeros(n), 0.0
    st, fifo, t, events = _State(n), _Fifo(), 0.0, 0
    while np.isnan(drained_at).any():
        events += 1
        if events > max_events:
            raise RuntimeError("fifo_pool: too many events (a rate that never moves?)")
        a, d, a_total = _rates(t, start_us, acc, nbytes, rate, weight, st, fifo, drain)
        dt = _next_dt(t, start_us, acc, drn, nbytes, limit, pool, a, d, st, fifo, a_total, drain)
        acc, drn = fifo.advance(acc, drn, nbytes, a, d, a_total, drain, dt)
        t += dt
        _settle(t, acc, drn, nbytes, limit, pool, a, d, st, fifo, drain, issue_end, drained_at)
        peak_q = np.maximum(peak_q, acc - drn)
        peak_pool = max(peak_pool, float((acc - drn).sum()))
    return PoolResult(issue_end, drained_at, peak_q, peak_pool, events)


def _accept(issuing, rate, weight, d_head, st, drain):
    """Acceptance rates: ceilings (own drain at the limit), water-filled by weight while the pool is
    full. A capped producer that the water-fill gives less than its drain leaves its limit."""
    while True:
        ceiling = np.where(st.capped, np.minimum(rate, d_head), np.where(issuing, rate, 0.0))
        if st.full and ceiling.sum() <= drain:
            st.full = False                                   # the waiting producers cannot use R
        a = water_fill(ceiling, weight, drain) if st.full else ceiling
        falls = st.capped & (a < d_head * (1.0 - 1e-12))
        if not falls.any():
            return a
        st.capped &= ~falls


def _rates(t, start_us, acc, nbytes, rate, weight, st, fifo, drain):
    """(a, d, sum a) at ``t``: the pool's acceptance rates, accounted by :meth:`_Fifo.accept`."""
    issuing = (start_us <= t + TOL_US) & (acc < nbytes)
    st.capped &= issuing & (not fifo.empty())
    st.full &= not fifo.empty()
    d_head = drain * fifo.frac[0] if not fifo.empty() else np.zeros(len(acc))
    st.capped &= d_head < rate
    return fifo.accept(_accept(issuing, rate, weight, d_head, st, drain), drain)


def _settle(t, acc, drn, nbytes, limit, pool, a, d, st, fifo, drain, issue_end, drained_at):
    """Put what reached a boundary at ``t`` on it: issue ends, limits, a full pool, emptied head
    segments, producers with no byte left in the FIFO (drained)."""
    tol = TOL_BYTES * np.maximum(1.0, nbytes)
    done = (a > 0.0) & (nbytes - acc <= tol)
    acc[done] = nbytes[done]
    issue_end[done & np.isnan(issue_end)] = t
    st.capped |= (a > d) & (acc < nbytes) & (acc - drn >= limit - TOL_BYTES * np.maximum(1.0, limit))
    if a.sum() > d.sum() and (acc - drn).sum() >= pool - TOL_BYTES * max(1.0, pool):
        st.full = True
    fifo.settle(t, acc, drn, nbytes, drain, drained_at)


def _next_dt(t, start_us, acc, drn, nbytes, limit, pool, a, d, st, fifo, a_total, drain) -> float:
    """Time to the earliest event at these rates: fifo_drain's events (per-producer limits as its
    caps) or the pool filling."""
    dt = _drain_next_dt(t, start_us, acc, drn, nbytes, limit, a, d, st.capped, fifo, a_total, drain)
    grow = a_total - float(d.sum())
    if not st.full and grow > 0.0:
        dt = min(dt, max(pool - float((acc - drn).sum()), 0.0) / grow)
    return dt
