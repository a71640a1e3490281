"""The fluid X-Stage of one source GPU: per-producer outstanding stores, drained at rate R.

Each producer i (one CTA) owns an equal share ``cap = Q(K) / K`` of the outstanding capacity
(the measured Q(K) grows with K: docs/calibration.md). Per producer: outstanding bytes
``q`` (0 <= q <= cap), cumulative drained bytes ``D`` and, while it issues a tile, bytes
``left`` still to issue at its nominal rate ``r = bytes / T_iss0``. Rates are piecewise
constant between events:

- **drain**: the aggregate rate R is shared by weighted water-filling with the platform's
  arbitration weights ``w``: an issuer with nothing outstanding takes at most ``r`` (its
  stores pass straight through) while that fits under the water level L; every other producer
  that wants the drain (bytes outstanding, or an issuer the level does not satisfy) gets
  ``L * w``. Equal weights share fairly.
- **injection**: an issuer injects at ``r`` while ``q < cap``; once its share is full, only
  as fast as its own stores drain (``min(r, L * w)``).

With identical producers this is one queue of capacity Q drained at R, so eqs. 1-7 hold
exactly; with unequal weights producers drift out of phase and the slowest one sets the
burst's span, as on the hardware. A tile's bytes have drained when ``D`` reaches the value
``D + q`` had at its issue end (each producer's stores drain in order).

**The virtual clock.** The stage keeps ``V = integral of L dt``. A producer that drains at
``L * w`` moves by ``w`` per unit of V, whatever L does, so its events (queue empty, issue end
of a full producer, a drain mark) sit at fixed V keys: ``V0 + bytes / w``. Only the few
issuers whose queue is filling or emptying (mode MIXED) have an event time that depends on
L; their keys are recomputed whenever the water-fill runs. So each producer is kept as an
*anchor* (its q, D, left at time t0 and clock V0) plus a mode that fixes how they move:

========  ======================  =======================================  ===============
mode      state                    motion                                   event keys
========  ======================  =======================================  ===============
IDLE      q = 0, not issuing       none                                     none
BACKLOG   q > 0, not issuing       q -= w dV, D += w dV                     empty, mark (V)
FULL      q = cap, issuing, Lw<=r  left -= w dV, D += w dV                  finish, mark (V)
PASS      q = 0, issuing, served   left -= r dt, D += r dt                  finish (t)
MIXED     any other issuer         q += r dt - w dV, left -= r dt, D += w dV finish, q at cap
                                                                            or 0 (t), mark (V)
========  ======================  =======================================  ===============

A producer is re-anchored (its values evaluated and stored, t0 = now, V0 = V) when one of
its events is due and when its mode changes. This module and :mod:`xsim.des.water_fill` are
the whole arithmetic of the X-Stage, on the arrays of :mod:`xsim.des.fluid_state`; both
engines call the same compiled functions (:mod:`xsim.des.jit`), with one difference: the
reference engine lets them examine every producer (``scan_all``), the fast engine only the
producers that can change, found through lists and min-trees (:mod:`xsim.des.min_tree`).
Their results are equal bit for bit, which the engine-equality tests check.

The functions take the arrays of a stage they use, in :class:`FluidStage`'s order (``stage,
count, fluid, status, lists, trees``: :func:`snap` and :func:`~xsim.des.water_fill.flows` take
all six, ``*stage``), then ``n`` (the number of producers), ``now`` and ``scan_all``. No more:
numba passes every array as its fields, so an array a function does not use costs a few
nanoseconds per call on the engines' hottest path.

Weights are rounded to multiples of 2**-20 (:func:`quantize_weights`), so the sum of the
weights of the producers that want the drain is exact in any order of updates.
"""
from __future__ import annotations

import math

from xsim.des.fluid_state import (BACKLOG, FULL, GATE_OFF, GATE_WAIT, MIXED, PASS, REL_TOL, Fluid,  # noqa: F401
                                  FluidStage, List, Stage, StageCount, Status, Tree, new_stage, quantize_weights)
from xsim.des.jit import jit
from xsim.des.min_tree import collect_due, node, tree_set


@jit
def tol_t(now):
    """An event closer than this to ``now`` is due now (rounding cannot resolve it)."""
    return REL_TOL * max(1.0, now)


@jit
def band(stage):
    """An occupancy this close to the load gate's threshold is at it (rounding cannot tell above
    from below): a stall gate's crossing is decided by the slope there (:mod:`xsim.des.stall`)."""
    return REL_TOL * max(stage[Stage.GATE], 1.0)


@jit
def near_gate(stage, value, slope, now):
    """An occupancy ``value`` moving at ``slope`` is at the threshold at ``now``: within :func:`band`,
    or close enough that its crossing is due now (within :func:`tol_t`)."""
    return abs(value - stage[Stage.GATE]) <= band(stage) + tol_t(now) * abs(slope)


@jit
def threshold_v(stage, now):
    """The clock value up to which V keys are due at ``now``."""
    return stage[Stage.V] * (1.0 + REL_TOL) + stage[Stage.LEVEL] * tol_t(now)


@jit
def advance(stage, now):
    """Move the clock to ``now`` at the current level."""
    dt = now - stage[Stage.T]
    if dt > 0.0:
        stage[Stage.V] += stage[Stage.LEVEL] * dt
    stage[Stage.T] = now


@jit
def evaluate(fluid, k, now, v, cap):
    """(q, D, left) of producer k at time ``now`` and clock ``v``, from its anchor and motion
    (a zero coefficient adds exactly nothing, so each mode rounds as its own formula would)."""
    f = fluid
    s, u = now - f[Fluid.T0, k], v - f[Fluid.V0, k]
    q = min(max(f[Fluid.Q0, k] + f[Fluid.QA, k] * s - f[Fluid.QB, k] * u, 0.0), cap)
    return (q, f[Fluid.D0, k] + f[Fluid.DA, k] * s + f[Fluid.DB, k] * u,
            max(f[Fluid.L0, k] - f[Fluid.LA, k] * s - f[Fluid.LB, k] * u, 0.0))


@jit
def set_mode(count, fluid, status, lists, k, mode):
    """Producer k moves in ``mode`` from its anchor on: the coefficients of its motion, and its
    place in the list of producers whose q moves (the others' q stays at its anchor value, which
    is then ``fluid[Fluid.QNOW, k]``)."""
    f, r, w = fluid, fluid[Fluid.RATE, k], fluid[Fluid.W, k]
    status[Status.MODE, k] = mode
    moving = mode == BACKLOG or mode == MIXED
    if moving and status[Status.MOVING_AT, k] < 0:
        status[Status.MOVING_AT, k] = count[StageCount.MOVING]
        lists[List.MOVING, count[StageCount.MOVING]] = k
        count[StageCount.MOVING] += 1
    elif not moving and status[Status.MOVING_AT, k] >= 0:
        last = lists[List.MOVING, count[StageCount.MOVING] - 1]
        lists[List.MOVING, status[Status.MOVING_AT, k]], status[Status.MOVING_AT, last] = last, status[Status.MOVING_AT, k]
        status[Status.MOVING_AT, k] = -1
        count[StageCount.MOVING] -= 1
        f[Fluid.QNOW, k] = f[Fluid.Q0, k]
    f[Fluid.QA, k] = r if mode == MIXED else 0.0
    f[Fluid.QB, k] = w if mode == BACKLOG or mode == MIXED else 0.0
    f[Fluid.DA, k] = r if mode == PASS else 0.0
    f[Fluid.DB, k] = w if mode == BACKLOG or mode == FULL or mode == MIXED else 0.0
    f[Fluid.LA, k] = r if mode == PASS or mode == MIXED else 0.0
    f[Fluid.LB, k] = w if mode == FULL else 0.0


@jit
def anchor(fluid, k, q, d, left, now, v):
    f = fluid
    f[Fluid.Q0, k], f[Fluid.D0, k], f[Fluid.L0, k], f[Fluid.T0, k], f[Fluid.V0, k] = q, d, left, now, v


@jit
def touch(count, status, lists, k):
    """Producer k changed at this instant: flows must look at it."""
    if status[Status.TOUCHED, k] == 0:
        status[Status.TOUCHED, k] = 1
        lists[List.TOUCHED, count[StageCount.TOUCHED]] = k
        count[StageCount.TOUCHED] += 1


@jit
def mark_key(fluid, k, mark):
    """The clock value at which producer k's drained bytes reach ``mark`` (it drains at L w)."""
    return fluid[Fluid.V0, k] + (mark - fluid[Fluid.D0, k]) / fluid[Fluid.W, k]


@jit
def mark_due(stage, fluid, status, k, mark, now):
    """Producer k's stores up to cumulative byte ``mark`` have drained by ``now``."""
    mode = status[Status.MODE, k]
    if mode == BACKLOG or mode == FULL or mode == MIXED:
        return mark_key(fluid, k, mark) <= threshold_v(stage, now)
    return mark <= evaluate(fluid, k, now, stage[Stage.V], fluid[Fluid.CAP, k])[1]


@jit
def start(stage, count, fluid, status, lists, k, nbytes, rate, now):
    """Producer k starts issuing ``nbytes`` at ``rate`` (the stage advanced to ``now``)."""
    q, d, _ = evaluate(fluid, k, now, stage[Stage.V], fluid[Fluid.CAP, k])
    anchor(fluid, k, q, d, nbytes, now, stage[Stage.V])
    fluid[Fluid.RATE, k] = rate
    touch(count, status, lists, k)


@jit
def settle_one(stage, fluid, status, k, now, thr_t, thr_v):
    """Evaluate producer k, put every quantity whose event is due exactly on its boundary, and
    re-anchor it."""
    f, cap = fluid, fluid[Fluid.CAP, k]
    q, d, left = evaluate(f, k, now, stage[Stage.V], cap)
    mode = status[Status.MODE, k]
    if mode == FULL:
        if f[Fluid.KFIN, k] <= thr_v:
            left = 0.0
    elif mode == PASS or mode == MIXED:
        if f[Fluid.KFIN, k] <= thr_t:
            left = 0.0
    if mode == BACKLOG and f[Fluid.KBND, k] <= thr_v:
        d, q = d + q, 0.0
    elif mode == MIXED and f[Fluid.KBND, k] <= thr_t:
        if f[Fluid.RATE, k] - stage[Stage.LEVEL] * f[Fluid.W, k] > 0.0:
            q = cap
        else:
            d, q = d + q, 0.0
    anchor(f, k, q, d, left, now, stage[Stage.V])


@jit
def snap(stage, count, fluid, status, lists, trees, n, now, scan_all):
    """Settle every producer with an event due at ``now``; their local indices, in order, go to
    ``lists[List.DUE, :count]`` (and to the touched list). Returns the count. ``scan_all`` tests
    every producer (reference); otherwise the min-trees find them."""
    thr_t, thr_v = now + tol_t(now), threshold_v(stage, now)
    due, found = lists[List.DUE], lists[List.CAND]
    n_due = 0
    if scan_all:
        for k in range(n):
            if fluid[Fluid.KT, k] <= thr_t or fluid[Fluid.KV, k] <= thr_v:
                due[n_due] = k
                n_due += 1
    elif n > 0:
        seen = status[Status.SEEN]
        n_found = collect_due(trees[Tree.T], fluid[Fluid.KT], thr_t, seen, found, 0)
        n_found = collect_due(trees[Tree.V], fluid[Fluid.KV], thr_v, seen, found, n_found)
        for j in range(n_found):  # into producer order
            k = found[j]
            seen[k] = 0
            m = n_due
            while m > 0 and due[m - 1] > k:
                due[m] = due[m - 1]
                m -= 1
            due[m] = k
            n_due += 1
    for j in range(n_due):
        k = due[j]
        settle_one(stage, fluid, status, k, now, thr_t, thr_v)
        touch(count, status, lists, k)
    return n_due


@jit
def gate_keys(stage, fluid, k, mode, now, q):
    """While producer k's mainloop waits at a producer-scope load gate: the clock (BACKLOG) or
    time (MIXED, its q at ``now``) at which its q falls to the threshold; ``now`` if the mode
    holds q at or below it. (inf, inf) if q does not fall (FULL above the threshold)."""
    f, gate = fluid, stage[Stage.GATE]
    gv, gt = math.inf, math.inf
    if mode == BACKLOG:
        gv = f[Fluid.V0, k] + (f[Fluid.Q0, k] - gate) / f[Fluid.W, k]
    elif mode == MIXED:
        dq = f[Fluid.RATE, k] - stage[Stage.LEVEL] * f[Fluid.W, k]
        if dq < 0.0:
            gt = now + (q - gate) / -dq
        elif q <= gate:
            gt = now
    elif mode != FULL or f[Fluid.CAP, k] <= gate:  # IDLE, PASS: q = 0; FULL: q = cap
        gt = now
    return gv, gt


@jit
def stall_keys(stage, fluid, k, mode, now, q, past):
    """A stall gate's keys (the hysteresis of :mod:`xsim.des.stall`, so that a flip never calls for
    the opposite flip at the same instant). Waiting: :func:`gate_keys`, except that q at the
    threshold (:func:`near_gate`) and rising has no key (it stays closed) and q at it and not
    moving is due now. Past the gate (``past``): the time q rises above the threshold (only a
    MIXED producer's q rises; ``now`` if FULL above it), else none."""
    f, gate, tol = fluid, stage[Stage.GATE], band(stage)
    dq = f[Fluid.RATE, k] - stage[Stage.LEVEL] * f[Fluid.W, k] if mode == MIXED else 0.0
    if past:
        gt = math.inf
        if mode == MIXED and dq > 0.0:
            gt = now + (gate - q) / dq
        elif mode == FULL and f[Fluid.CAP, k] > gate + tol:
            gt = now
        return math.inf, gt
    gv, gt = gate_keys(stage, f, k, mode, now, q)
    if mode == MIXED and dq >= 0.0:
        below = q < gate and not near_gate(stage, q, dq, now)   # an up-crossing would not be due at once
        gt = now if (below or (dq == 0.0 and q <= gate + tol)) else math.inf
    elif mode == FULL and f[Fluid.CAP, k] <= gate + tol:
        gt = now
    return gv, gt


@jit
def keys(stage, fluid, status, trees, k, now):
    """Producer k's event keys from its anchor, mode and (for MIXED) the current level; with its
    mainloop at a load gate, the gate's crossing too (``Fluid.GV``, ``Fluid.GT``; a stall gate's:
    :func:`stall_keys`)."""
    f, mode = fluid, status[Status.MODE, k]
    kfin, kbnd, kt, kv, q = math.inf, math.inf, math.inf, math.inf, 0.0
    if mode == BACKLOG:
        kbnd = f[Fluid.V0, k] + f[Fluid.Q0, k] / f[Fluid.W, k]
        kv = kbnd
    elif mode == FULL:
        kfin = f[Fluid.V0, k] + f[Fluid.L0, k] / f[Fluid.W, k]
        kv = kfin
    elif mode == PASS:
        kfin = f[Fluid.T0, k] + f[Fluid.L0, k] / f[Fluid.RATE, k]
        kt = kfin
    elif mode == MIXED:
        kfin = f[Fluid.T0, k] + f[Fluid.L0, k] / f[Fluid.RATE, k]
        q = evaluate(f, k, now, stage[Stage.V], f[Fluid.CAP, k])[0]
        dq = f[Fluid.RATE, k] - stage[Stage.LEVEL] * f[Fluid.W, k]
        if dq > 0.0:
            kbnd = now + (f[Fluid.CAP, k] - q) / dq
        elif dq < 0.0 and q > 0.0:
            kbnd = now + q / -dq
        kt = min(kfin, kbnd)
    if f[Fluid.MARK, k] < math.inf and (mode == BACKLOG or mode == FULL or mode == MIXED):
        kv = min(kv, mark_key(f, k, f[Fluid.MARK, k]))
    at_gate = status[Status.GATE, k]
    if at_gate != GATE_OFF:
        if stage[Stage.STALL] == 0.0:
            gv, gt = gate_keys(stage, f, k, mode, now, q)
        else:
            gv, gt = stall_keys(stage, f, k, mode, now, q, at_gate != GATE_WAIT)
        f[Fluid.GV, k], f[Fluid.GT, k] = gv, gt
        kv, kt = min(kv, gv), min(kt, gt)
    f[Fluid.KFIN, k], f[Fluid.KBND, k] = kfin, kbnd
    if f[Fluid.KT, k] != kt:
        f[Fluid.KT, k] = kt
        tree_set(trees[Tree.T], f[Fluid.KT], k)
    if f[Fluid.KV, k] != kv:
        f[Fluid.KV, k] = kv
        tree_set(trees[Tree.V], f[Fluid.KV], k)


@jit
def next_event(stage, fluid, trees, n, now, scan_all):
    """Time from ``now`` until the earliest event key (inf if none): a scan of every producer
    (``scan_all``, reference) or the roots of the min-trees."""
    kt, kv = math.inf, math.inf
    if scan_all:
        for k in range(n):
            kt, kv = min(kt, fluid[Fluid.KT, k]), min(kv, fluid[Fluid.KV, k])
    elif n > 0:
        kt, kv = node(trees[Tree.T], fluid[Fluid.KT], 1), node(trees[Tree.V], fluid[Fluid.KV], 1)
    dt = kt - now
    if kv < math.inf and stage[Stage.LEVEL] > 0.0:
        dt = min(dt, (kv - stage[Stage.V]) / stage[Stage.LEVEL])
    return max(dt, 0.0)


@jit
def fill_q(stage, count, fluid, lists, n, now, scan_all):
    """``fluid[Fluid.QNOW, :n]``: every producer's q at ``now`` (for the stage's q(t) trace), as
    :func:`evaluate` computes it. ``scan_all`` evaluates every producer (reference); otherwise
    only those whose q moves, since the others' q has stayed at the value stored when they
    stopped moving (exactly what evaluate gives them: zero coefficients)."""
    v = stage[Stage.V]
    if scan_all:
        for k in range(n):
            fluid[Fluid.QNOW, k] = evaluate(fluid, k, now, v, fluid[Fluid.CAP, k])[0]
    else:
        for j in range(count[StageCount.MOVING]):
            k = lists[List.MOVING, j]
            fluid[Fluid.QNOW, k] = evaluate(fluid, k, now, v, fluid[Fluid.CAP, k])[0]
