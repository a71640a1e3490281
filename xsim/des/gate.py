"""The load gate's arithmetic (:mod:`xsim.load_gate`) on a fluid X-Stage, for both engines.

A mainloop that loads memory starts only once the occupancy its producer sees is at or below
the stage's threshold (``Stage.GATE``): its own q (scope "producer") or the stage's total q
(scope "link"). Occupancy moves continuously, so a waiting mainloop is released at the
instant the occupancy reaches the threshold:

- **producer scope**: a new event key of the waiting producer (``Status.GATE`` set; keys
  ``Fluid.GV`` in the clock V for BACKLOG, ``Fluid.GT`` in time for MIXED, computed by
  :func:`xsim.des.fluid.gate_keys` with the producer's other keys), so the min-trees find it
  like any other event; the drain's turn releases the producers whose gate key is due.
- **link scope**: one stage-level key in time. Between two drain turns every rate is
  constant, so the total q is linear in time; each turn computes it and its slope
  (:func:`link_motion`, every producer in order) and the time it reaches the threshold.
- **fifo scope**: a mainloop that begins to wait at t0 waits for the bytes that were ahead of
  it, less the threshold: until the stage's cumulative drained bytes D(t) reach A(t0) - G (A:
  cumulative accepted bytes, G: the threshold). Since A = D + q, that is ``q(t) - (A(t) -
  A(t0)) <= G``: the link scope's total q less what was accepted since t0. Its *excess*
  (:func:`fifo_excess`, > 0 while it waits) falls at the drain rate, so like link scope it is
  one stage-level crossing key per turn (:func:`fifo_motion`, :func:`fifo_key`).

- **fifo-link scope**: the fifo scope at threshold 0 (a fence), then the link scope at the
  stage's threshold: a waiter the fifo turn releases joins a second list, the link waiters, whose
  turn follows in the same drain turn (its own crossing key, :func:`link_turn`).

Checking the gate never moves the stage (:func:`clock_at` evaluates the clock without storing
it), so a mainloop that passes at once leaves every result exactly as without a gate.
"""
from __future__ import annotations

import math

from xsim.des.fluid import evaluate, threshold_v, tol_t, touch
from xsim.des.fluid_state import BACKLOG, FULL, MIXED, PASS, Fluid, Stage, Status
from xsim.des.jit import jit


@jit
def clock_at(stage, now):
    """The clock V at ``now`` as :func:`xsim.des.fluid.advance` would compute it, not stored."""
    dt = now - stage[Stage.T]
    return stage[Stage.V] + stage[Stage.LEVEL] * dt if dt > 0.0 else stage[Stage.V]


@jit
def producer_open(stage, fluid, k, now):
    """Producer k's q at ``now`` is at or below the threshold."""
    return evaluate(fluid, k, now, clock_at(stage, now), fluid[Fluid.CAP, k])[0] <= stage[Stage.GATE]


@jit
def _q(fluid, status, k, now, v, cap):
    """Producer k's q at ``now``, as :func:`xsim.des.fluid.evaluate` gives it: its anchor value unless
    its q moves (BACKLOG, MIXED; the other modes' zero coefficients add exactly nothing)."""
    mode = status[Status.MODE, k]
    if mode == BACKLOG or mode == MIXED:
        return evaluate(fluid, k, now, v, cap)[0]
    return fluid[Fluid.Q0, k]


@jit
def link_total(stage, fluid, status, n, now):
    """The stage's total q at ``now`` (producers in order)."""
    v, total = clock_at(stage, now), 0.0
    for k in range(n):
        total += _q(fluid, status, k, now, v, fluid[Fluid.CAP, k])
    return total


@jit
def link_open(stage, fluid, status, n, now):
    """The stage's total q at ``now`` is at or below the threshold."""
    return link_total(stage, fluid, status, n, now) <= stage[Stage.GATE]


@jit
def fence_open(stage, fluid, status, n, now):
    """A fifo-link gate passes at once: nothing is in the stage, so the fence has nothing ahead
    and the link gate after it is open too."""
    return link_total(stage, fluid, status, n, now) <= 0.0


@jit
def wait_producer(count, status, lists, k):
    """Producer k's mainloop waits at the gate: the drain's next water-fill gives it a gate key."""
    status[Status.GATE, k] = 1
    touch(count, status, lists, k)


@jit
def producer_due(stage, fluid, status, k, now):
    """Producer k waits at the gate and its gate key is due at ``now`` (then: no longer waiting)."""
    if status[Status.GATE, k] == 0:
        return False
    if fluid[Fluid.GT, k] <= now + tol_t(now) or fluid[Fluid.GV, k] <= threshold_v(stage, now):
        status[Status.GATE, k] = 0
        fluid[Fluid.GV, k], fluid[Fluid.GT, k] = math.inf, math.inf
        return True
    return False


@jit
def link_motion(stage, fluid, status, n, now):
    """(total q, its rate of change) of the stage from ``now`` at the current level (the stage
    advanced to ``now``): a BACKLOG producer's q falls at L w, a MIXED one's moves at r - L w
    (:func:`fifo_motion`'s first two, the same sums in the same order)."""
    total, slope, _ = fifo_motion(stage, fluid, status, n, now)
    return total, slope


@jit
def link_turn(stage, fluid, status, n, now, key):
    """At a drain turn with mainloops waiting at a link-scope gate, after the water-fill: release
    them (True) if the total q is at or below the threshold or the previous turn's crossing
    ``key`` is due; else (False, the time the total q reaches the threshold, inf if it does not fall)."""
    total, slope = link_motion(stage, fluid, status, n, now)
    gate = stage[Stage.GATE]
    if total <= gate or key <= now + tol_t(now):
        return True, math.inf
    if slope < 0.0:
        return False, now + (total - gate) / -slope
    return False, math.inf


# ---- fifo scope ---------------------------------------------------------------------------------
# The stage's accepted bytes are kept relative to an anchor set when a mainloop begins to wait at
# an empty list of waiters ("acc": bytes accepted since then). Between two drain turns every rate
# is constant, so acc is linear: each turn adds (its rate since the last turn) x (the time since)
# and takes the rate for the next interval from the fluid after the water-fill. A waiter keeps
# acc at the instant it began to wait. acc is non-decreasing, so the waiters' targets are in the
# order they began to wait: the list is a FIFO whose head holds the earliest target, and one key,
# the head's crossing, is all a turn needs. Rounding: acc grows only by the bytes accepted while
# someone waits (the anchor moves each time the list empties), each turn adding one rounding of
# about 1.1e-16 x acc, so the targets are exact to ~1e-16 x turns x bytes accepted since the
# anchor: with 1e5 turns and 1e8 B, ~2e-3 B, ~4e-8 us of drain at 50 GB/s; a crossing within
# tol_t (1e-12 relative in time) is due, as for every other key.


@jit
def fifo_acc(acc, acc_t, acc_rate, now):
    """Bytes accepted since the anchor at ``now``: ``acc`` at ``acc_t`` (the last turn), then
    ``acc_rate`` (constant until the next turn). Adds exactly nothing at ``now == acc_t``."""
    return acc + acc_rate * (now - acc_t)


@jit
def fifo_motion(stage, fluid, status, n, now):
    """(total q, its rate of change, the rate at which the stage accepts bytes) from ``now`` at the
    current level (after the water-fill; the clock as :func:`clock_at` gives it, which is the
    stored one once the stage is advanced to ``now``): a BACKLOG producer's q falls at L w, a
    MIXED one's moves at r - L w; a MIXED or PASS issuer accepts at r, a FULL one at L w (it
    injects what drains)."""
    v, level = clock_at(stage, now), stage[Stage.LEVEL]
    total, slope, accept = 0.0, 0.0, 0.0
    for k in range(n):
        total += _q(fluid, status, k, now, v, fluid[Fluid.CAP, k])
        mode = status[Status.MODE, k]
        if mode == BACKLOG:
            slope -= level * fluid[Fluid.W, k]
        elif mode == MIXED:
            slope += fluid[Fluid.RATE, k] - level * fluid[Fluid.W, k]
            accept += fluid[Fluid.RATE, k]
        elif mode == FULL:
            accept += level * fluid[Fluid.W, k]
        elif mode == PASS:
            accept += fluid[Fluid.RATE, k]
    return total, slope, accept


@jit
def fifo_excess(total, acc, acc_waiter, threshold):
    """How far a waiter that began to wait at accepted bytes ``acc_waiter`` is above its target
    (> 0: it waits): the total q less the bytes accepted since, less the fifo target's
    ``threshold`` (:func:`fifo_threshold`). With nothing accepted since (``acc == acc_waiter``) it
    is exactly link scope's ``total - threshold``."""
    return (total - (acc - acc_waiter)) - threshold


@jit
def fifo_threshold(stage, then_link):
    """The fifo target's threshold: 0 for a fifo-link gate's fence, else the stage's."""
    return 0.0 if then_link else stage[Stage.GATE]


@jit
def fifo_bound(excess_head, key, now):
    """The excess up to which waiters are released at this turn, given the head's: 0 (those at
    or below their target), or the head's own excess if the previous turn's crossing ``key`` is
    due (rounding left it a hair above: it and every waiter with the same target go)."""
    if key <= now + tol_t(now):
        return max(excess_head, 0.0)
    return 0.0


@jit
def fifo_key(now, excess, slope, accept):
    """The time the head's excess reaches 0: it falls at the drain rate ``accept - slope``
    (inf if nothing drains)."""
    rate = accept - slope
    if rate > 0.0:
        return now + excess / rate
    return math.inf
