"""The fast engine's X-Stage: :class:`xsim.des.simpy_engine.XStage` on the arrays of :mod:`xsim.des.fast_state`.

The arithmetic is the fluid's (:mod:`xsim.des.fluid`, :mod:`xsim.des.water_fill`), called as
the SimPy engine's ``XStage`` calls it, except that it examines only candidates
(``scan_all=False``) and the issue-end and drain-mark loops visit only the producers that
``fluid.snap`` found due (the SimPy engine visits every producer; equal results show that
nothing was missed). Each producer's drain marks are a FIFO linked through its tiles
(``TileI.MARK_NEXT``; the mark itself in ``TileF.MARK``).
"""

from __future__ import annotations

import math

from xsim.des import fluid
from xsim.des.event_queue import NORMAL, new_key, succeed
from xsim.des.fast_state import (DR_SCHEDULED, K_DRAIN, K_DRAINED, K_ISSUER, K_WAKE, SLEEP_COND, SLEEP_WAKE_ONLY,
                                 Column, DrainF, DrainI, TileF, TileI, fluid_stage)
from xsim.des.fluid_state import Fluid, List
from xsim.des.jit import inline, jit
from xsim.des.water_fill import flows

INF = math.inf


@jit
def inject(x, g, k, tile, nbytes, rate, now, q):
    """XStage.inject: the producer in local column k of stage g starts issuing ``tile``'s
    ``nbytes`` at ``rate``; wakes the drain, whose turn at this instant runs the water-fill."""
    fluid.advance(x.stage[g], now)
    stage, count, f, status, lists, _ = fluid_stage(x, g)
    fluid.start(stage, count, f, status, lists, k, nbytes, rate, now)
    x.column[Column.ISSUING, x.drain_i[g, DrainI.BASE] + k] = tile
    if x.drain_i[g, DrainI.WOKEN] == 0:
        x.drain_i[g, DrainI.WOKEN] = 1
        succeed(q, now, K_WAKE, g, x.drain_i[g, DrainI.GEN])


@inline
def _settle(x, tiles, g, now, q):
    """XStage._settle: issue ends in producer order, then each producer's due drain marks; flows.
    Only producers with an event due now can end an issue or pass a mark: the due list."""
    s = fluid_stage(x, g)  # the stage's arrays, by local column
    stage, _, fluid_g, status_g, _, _ = s
    base, n = x.drain_i[g, DrainI.BASE], x.drain_i[g, DrainI.SIZE]
    col, f, tf, ti = x.column, x.fluid, tiles.f, tiles.i  # by column k = base + local, by tile
    due = fluid.snap(*s, n, now, False)
    for j in range(due):
        k = base + x.lists[List.DUE, base + j]
        tile = col[Column.ISSUING, k]
        if tile >= 0 and f[Fluid.L0, k] <= 0.0:
            col[Column.ISSUING, k], f[Fluid.RATE, k] = -1, 0.0
            tf[TileF.MARK, tile], ti[TileI.MARK_NEXT, tile] = f[Fluid.D0, k] + f[Fluid.Q0, k], -1
            if col[Column.MARK_HEAD, k] < 0:
                col[Column.MARK_HEAD, k] = tile
            else:
                ti[TileI.MARK_NEXT, col[Column.MARK_TAIL, k]] = tile
            col[Column.MARK_TAIL, k] = tile
            succeed(q, now, K_ISSUER, col[Column.PRODUCER, k], 0)
    for j in range(due):
        local = x.lists[List.DUE, base + j]
        k = base + local
        tile = col[Column.MARK_HEAD, k]
        while tile >= 0 and fluid.mark_due(stage, fluid_g, status_g, local, tf[TileF.MARK, tile], now):
            succeed(q, now, K_DRAINED, tile, 0)
            ti[TileI.DRAINED, tile] = DR_SCHEDULED
            tile = ti[TileI.MARK_NEXT, tile]
        col[Column.MARK_HEAD, k] = tile
        f[Fluid.MARK, k] = tf[TileF.MARK, tile] if tile >= 0 else INF
    flows(*s, n, now, False)


@jit
def pairwise_sum(a, lo, n):
    """``a[lo:lo + n].sum()`` as numpy computes it (pairwise, 8 accumulators), to the last bit."""
    if n < 8:
        s = 0.0
        for i in range(lo, lo + n):
            s += a[i]
        return s
    if n <= 128:
        r0, r1, r2, r3, r4, r5, r6, r7 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3], a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
        i = lo + 8
        while i < lo + n - n % 8:
            r0, r1, r2, r3 = r0 + a[i], r1 + a[i + 1], r2 + a[i + 2], r3 + a[i + 3]
            r4, r5, r6, r7 = r4 + a[i + 4], r5 + a[i + 5], r6 + a[i + 6], r7 + a[i + 7]
            i += 8
        s = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < lo + n:
            s += a[i]
            i += 1
        return s
    half = n // 2 - (n // 2) % 8
    return pairwise_sum(a, lo, half) + pairwise_sum(a, lo + half, n - half)


@inline
def drain_turn(x, tiles, g, now, q, tracing):
    """One turn of XStage.drain's loop: advance, settle, q breakpoint, then sleep until the next
    fluid event (a timer) or a wake. Returns True if the q(t) trace got a new breakpoint."""
    d, df = x.drain_i, x.drain_f
    fluid.advance(x.stage[g], now)
    _settle(x, tiles, g, now, q)
    stage, count, f, _, lists, trees = fluid_stage(x, g)
    point = False
    if tracing:
        fluid.fill_q(stage, count, f, lists, d[g, DrainI.SIZE], now, False)
        total = pairwise_sum(x.fluid[Fluid.QNOW], d[g, DrainI.BASE], d[g, DrainI.SIZE])
        point = now > df[g, DrainF.TRACE_T] or total != df[g, DrainF.TRACE_Q]
        if point:
            df[g, DrainF.TRACE_T], df[g, DrainF.TRACE_Q] = now, total
    d[g, DrainI.GEN] += 1
    d[g, DrainI.WOKEN], d[g, DrainI.COND] = 0, 0
    dt = fluid.next_event(stage, f, trees, d[g, DrainI.SIZE], now, False)
    if dt == INF:
        d[g, DrainI.SLEEP], df[g, DrainF.TIMER] = SLEEP_WAKE_ONLY, INF
    else:
        d[g, DrainI.SLEEP], d[g, DrainI.COND] = SLEEP_COND, 1
        df[g, DrainF.TIMER], d[g, DrainI.TIMER_KEY] = now + dt, new_key(q, NORMAL)
    return point


@jit
def fire_condition(drain_i, g, now, q):
    """Stage g's drain: its timeout or wake reached its (timeout | wake) condition."""
    if drain_i[g, DrainI.COND] == 1:
        drain_i[g, DrainI.COND] = 0
        succeed(q, now, K_DRAIN, g, drain_i[g, DrainI.GEN])
