"""The X-Stage drained in acceptance order: an exact event-driven fluid of one stage (reference).

The discipline (``drain_order = "fifo"``, issue 8; the shipped DES drains by weighted
water-filling, :mod:`xsim.des.water_fill`):

- **one FIFO per source GPU.** The link serves the accepted bytes of all producers in the
  order it accepted them, at the aggregate rate R. The FIFO is a sequence of *segments*: an
  interval during which every producer's acceptance rate ``a_i`` was constant; a segment holds
  ``length`` bytes of composition ``a_i / sum(a)``. While the head segment drains, producer i
  drains at ``R * frac_i(head)``: its share follows its acceptance history, not a drain weight.
- **per-producer credits.** Producer i owns ``cap_i`` bytes of outstanding capacity (its credits,
  the equal share Q(K)/K); outstanding ``q_i = accepted_i - drained_i``. It is accepted at its
  issue rate ``r_i`` while ``q_i < cap_i``; at ``q_i = cap_i`` only as fast as its credits come
  back (its own bytes drain): ``a_i = min(r_i, d_i)``. A producer whose bytes are not in the head
  segment gets no credits back until they reach it.
- **pass-through.** With the FIFO empty and ``sum(a) <= R`` every byte drains as it is accepted
  (``d_i = a_i``, nothing outstanding); once ``sum(a) > R`` a segment opens and is the head.
- There are no drain weights. (Arbitration could decide who gets freed credits first if the
  credits were a shared pool; with per-producer credits each producer's freed capacity is its
  own, so weights play no part here.)

Rates are piecewise constant between events: a producer starts or finishes issuing, its q
reaches its cap, the head segment empties, the FIFO empties. Between events every quantity is
linear in t, so each event time is exact up to rounding; segments shorter than
:data:`TOL_BYTES` are dropped.

This module is not wired into the engines (:mod:`xsim.des.simpy_engine`,
:mod:`xsim.des.fast_xstage`), whose arithmetic (:mod:`xsim.des.fluid`) rests on static weights
and a virtual clock ``V = integral L dt``; see docs/simulator.md for what the engines would need.
It is the reference the engines' fifo mode is to be checked against, and the tool used to
measure the discipline on isolated bursts (benchmarks/fifo_drain_probe.py,
benchmarks/fifo_isolated_errors.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOL_BYTES = 1e-9      # a segment or a remainder this short is empty
TOL_US = 1e-12        # event times this close are the same instant


@dataclass(frozen=True)
class FifoResult:
    """Per producer: the time its last byte was accepted (issue end) and drained (us)."""

    issue_end_us: np.ndarray
    drained_us: np.ndarray
    events: int


def _check(start_us, nbytes, rate, cap, drain):
    for name, a in (("nbytes", nbytes), ("rate", rate), ("cap", cap)):
        if np.any(a <= 0.0):
            raise ValueError(f'"{name}" must be > 0.')
    if np.any(start_us < 0.0):
        raise ValueError('"start_us" must be >= 0.')
    if not drain > 0.0:
        raise ValueError('"drain" must be > 0.')


class _Fifo:
    """The segments, head first: lengths (bytes) and compositions (fractions summing to 1)."""

    def __init__(self):
        self.length: list[float] = []
        self.frac: list[np.ndarray] = []
        self.open = False          # the last segment still grows (accepting while backlogged)

    def empty(self) -> bool:
        return not self.length

    def accept(self, a: np.ndarray, drain: float):
        """Account acceptance rates ``a``: (a, d, sum a), d the drain rates per producer. Passes
        through while empty and sum a <= R; else opens a tail segment when the acceptance mix
        changed, closes it when nothing is accepted."""
        a_total = float(a.sum())
        if self.empty() and a_total <= drain:
            self.open = False
            return a, a.copy(), a_total                       # pass-through
        if a_total > 0.0:
            mix = a / a_total
            if not (self.open and np.array_equal(self.frac[-1], mix)):
                self.length.append(0.0)
                self.frac.append(mix)
            self.open = True
        else:
            self.open = False
        return a, drain * self.frac[0], a_total

    def advance(self, acc, drn, nbytes, a, d, a_total: float, drain: float, dt: float):
        """Run ``dt`` at the rates of :meth:`accept`: the producers' accepted and drained bytes
        (new arrays), the tail segment's growth and the head's drain."""
        acc = np.minimum(acc + a * dt, nbytes)
        drn = np.minimum(drn + d * dt, acc)
        if self.open:
            self.length[-1] += a_total * dt
        if not self.empty():
            self.length[0] -= drain * dt
        return acc, drn

    def settle(self, t, acc, drn, nbytes, drain, drained_at) -> None:
        """Drop emptied head segments; producers with no byte left in the FIFO are drained
        (``drn`` catches up with ``acc``; ``drained_at`` set once they issued everything)."""
        while self.length and self.length[0] <= TOL_BYTES * max(1.0, drain):
            if len(self.length) == 1:
                self.open = False
            self.length.pop(0)
            self.frac.pop(0)
        present = np.zeros(len(acc), bool)
        for mix in self.frac:
            present |= mix > 0.0
        drn[~present] = acc[~present]                         # no byte of theirs is left in the FIFO
        gone = np.isnan(drained_at) & (acc >= nbytes) & ~present
        drained_at[gone] = t


def simulate(start_us, nbytes, rate, cap, drain, max_events: int = 10_000_000) -> FifoResult:
    """One stage, each producer issuing one tile of ``nbytes[i]`` at ``rate[i]`` (bytes/us) from
    ``start_us[i]`` with ``cap[i]`` bytes of credits; the link drains at ``drain`` bytes/us in
    acceptance order. Returns when every byte has drained."""
    start_us, nbytes, rate, cap = (np.asarray(a, dtype=float) for a in (start_us, nbytes, rate, cap))
    _check(start_us, nbytes, rate, cap, drain)
    n = len(nbytes)
    acc, drn = np.zeros(n), np.zeros(n)
    capped = np.zeros(n, bool)            # q = cap and credits come back slower than r
    issue_end, drained_at = np.full(n, np.nan), np.full(n, np.nan)
    fifo, t, events = _Fifo(), 0.0, 0
    while np.isnan(drained_at).any():
        events += 1
        if events > max_events:
            raise RuntimeError("fifo_drain: too many events (a rate that never moves?)")
        a, d, a_total = _rates(t, start_us, acc, nbytes, rate, capped, fifo, drain)
        dt = _next_dt(t, start_us, acc, drn, nbytes, cap, a, d, capped, fifo, a_total, drain)
        acc, drn = fifo.advance(acc, drn, nbytes, a, d, a_total, drain, dt)
        t += dt
        _settle(t, acc, drn, nbytes, cap, a, d, capped, fifo, drain, issue_end, drained_at)
    return FifoResult(issue_end, drained_at, events)


def _rates(t, start_us, acc, nbytes, rate, capped, fifo, drain):
    """(a, d, sum a) at ``t``: acceptance and drain rates per producer (bytes/us), accounted by
    :meth:`_Fifo.accept`; clears the capped flag of producers whose credits now come back at
    least as fast as they issue."""
    issuing = (start_us <= t + TOL_US) & (acc < nbytes)
    capped &= issuing & (not fifo.empty())
    d_head = drain * fifo.frac[0] if not fifo.empty() else np.zeros(len(acc))
    capped &= d_head < rate
    return fifo.accept(np.where(capped, np.minimum(rate, d_head), np.where(issuing, rate, 0.0)), drain)


def _settle(t, acc, drn, nbytes, cap, a, d, capped, fifo, drain, issue_end, drained_at):
    """Put what reached a boundary at ``t`` on it: issue ends, caps, emptied head segments,
    producers with no byte left in the FIFO (drained)."""
    tol = TOL_BYTES * np.maximum(1.0, nbytes)
    done = (a > 0.0) & (nbytes - acc <= tol)
    acc[done] = nbytes[done]
    issue_end[done & np.isnan(issue_end)] = t
    capped |= (a > d) & (acc < nbytes) & (acc - drn >= cap - TOL_BYTES * np.maximum(1.0, cap))
    fifo.settle(t, acc, drn, nbytes, drain, drained_at)


def _next_dt(t, start_us, acc, drn, nbytes, cap, a, d, capped, fifo, a_total, drain) -> float:
    """Time to the earliest event at these rates."""
    dt = np.inf
    later = start_us > t + TOL_US
    if later.any():
        dt = min(dt, float((start_us[later] - t).min()))
    go = a > 0.0
    if go.any():
        dt = min(dt, float(((nbytes[go] - acc[go]) / a[go]).min()))
    rise = ~capped & (a > d) & (acc < nbytes)
    if rise.any():
        dt = min(dt, float((np.maximum(cap[rise] - (acc[rise] - drn[rise]), 0.0) / (a[rise] - d[rise])).min()))
    if not fifo.empty():
        head_only_open = len(fifo.length) == 1 and fifo.open
        shrink = drain - (a_total if head_only_open else 0.0)
        if shrink > 0.0:
            dt = min(dt, max(fifo.length[0], 0.0) / shrink)
    return max(dt, 0.0)
