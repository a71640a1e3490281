"""The fast engine's X-Stage: :class:`xsim.des.simpy_engine.XStage` on the arrays of :mod:`xsim.des.fast_state`.

The arithmetic is the fluid's (:mod:`xsim.des.fluid`, :mod:`xsim.des.water_fill`), called as
the SimPy engine's ``XStage`` calls it, except that it examines only candidates
(``scan_all=False``) and the issue-end and drain-mark loops visit only the producers that
``fluid.snap`` found due (the SimPy engine visits every producer; equal results show that
nothing was missed). Each producer's drain marks are a FIFO linked through its tiles
(``TileI.MARK_NEXT``; the mark itself in ``TileF.MARK``). The load gate (:mod:`xsim.des.gate`):
:func:`gate_closed` registers a mainloop that must wait; the drain's turn releases producer-scope
waiters whose gate key is due (they are among the due producers) and, after the water-fill,
link-scope waiters once the stage's total q reaches the threshold, fifo-scope waiters (the same
list, with the stage's accepted bytes when each began to wait) once they reach their target. A
stall gate (:mod:`xsim.des.fast_stall`): :func:`stall_closed` is its arrival; the turn flips
producer-scope mainloops whose gate key is due (among the due producers) and, after the
water-fill, decides a link-scope gate.
"""

from __future__ import annotations

import math

from xsim.des import fast_stall, fluid, gate, stall
from xsim.des.event_queue import NORMAL, new_key, succeed
from xsim.des.fast_state import (DR_SCHEDULED, GATE_FIFO, GATE_FIFO_LINK, GATE_LINK, GATE_PRODUCER, K_DRAIN, K_DRAINED, K_ISSUER,
                                 K_MMA, K_WAKE, SLEEP_COND, SLEEP_WAKE_ONLY, Column, DrainF, DrainI, ProducerF,
                                 ProducerI, TileF, TileI, fluid_stage)
from xsim.des.fluid_state import GATE_PAST, Fluid, List, Stage, Status
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
    _wake(x, g, now, q)


@inline
def _wake(x, g, now, q):
    """Wake stage g's drain (once per instant)."""
    if x.drain_i[g, DrainI.WOKEN] == 0:
        x.drain_i[g, DrainI.WOKEN] = 1
        succeed(q, now, K_WAKE, g, x.drain_i[g, DrainI.GEN])


@jit
def gate_closed(x, producers, g, k, p, now, q, scope):
    """XStage.gate: False if producer p (local column k of stage g) may start its mainloop now;
    else True, and it waits (producer scope: a gate key at the drain's next water-fill; link and
    fifo scope: at the end of the stage's list of waiters, fifo with the stage's accepted bytes
    now), the drain woken to take it in. ``producers``: the Producers bundle (i, f)."""
    stage, count, f, status, lists, _ = fluid_stage(x, g)
    fifo = scope == GATE_FIFO or scope == GATE_FIFO_LINK
    if scope == GATE_LINK or fifo:
        n = x.drain_i[g, DrainI.SIZE]
        if gate.fence_open(stage, f, status, n, now) if scope == GATE_FIFO_LINK else \
                gate.link_open(stage, f, status, n, now):
            return False
        d, df, pi = x.drain_i, x.drain_f, producers.i
        if d[g, DrainI.GATE_HEAD] < 0:
            df[g, DrainF.GATE_KEY] = INF
            if fifo:  # the anchor: no one waits before this one
                df[g, DrainF.ACC], df[g, DrainF.ACC_T], df[g, DrainF.ACC_RATE] = 0.0, now, 0.0
            d[g, DrainI.GATE_HEAD] = p
        else:
            pi[d[g, DrainI.GATE_TAIL], ProducerI.GATE_NEXT] = p
        d[g, DrainI.GATE_TAIL], pi[p, ProducerI.GATE_NEXT] = p, -1
        if fifo:
            producers.f[p, ProducerF.GATE_ACC] = gate.fifo_acc(df[g, DrainF.ACC], df[g, DrainF.ACC_T],
                                                               df[g, DrainF.ACC_RATE], now)
    else:
        if gate.producer_open(stage, f, k, now):
            return False
        gate.wait_producer(count, status, lists, k)
    _wake(x, g, now, q)
    return True


@jit
def stall_closed(x, producers, g, k, p, mainloop_us, now, q, scope):
    """StallGate.arrive: False if producer p's (local column k of stage g) mainloop of
    ``mainloop_us`` runs now (the drain woken if the occupancy crosses up before its next turn);
    else True, and it waits, the drain woken to take it in."""
    stage, count, f, status, lists, _ = fluid_stage(x, g)
    d, df, pf = x.drain_i, x.drain_f, producers.f
    link = scope == GATE_LINK
    pf[p, ProducerF.LEFT] = mainloop_us
    if link:
        shut, key = stall.link_state(stage, f, status, d[g, DrainI.SIZE], now, INF)
        if d[g, DrainI.STALL_COUNT] == 0:
            df[g, DrainF.GATE_KEY] = key
        d[g, DrainI.STALL_COUNT] += 1
    else:
        shut, key = stall.producer_state(stage, f, status, k, now)
    if shut:
        if not link:
            gate.wait_producer(count, status, lists, k)
        fast_stall.wait(x, producers, g, p, link)
        _wake(x, g, now, q)
        return True
    producers.i[p, ProducerI.STALL], pf[p, ProducerF.RUN_T] = stall.RUNNING, now
    if not link:
        status[Status.GATE, k] = GATE_PAST
    if key < df[g, DrainF.TIMER]:
        _wake(x, g, now, q)
    return False


@inline
def _settle(x, tiles, producers, g, now, q, scope, stalls):
    """XStage._settle: issue ends in producer order, then each producer's due drain marks, then
    its load gate; flows; then a link- or fifo-scope gate. Only producers with an event due now
    can end an issue, pass a mark or reach a producer-scope gate: the due list."""
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
    if stalls and scope == GATE_PRODUCER:
        fast_stall.producer_turn(x, producers, g, due, now, q)
    elif scope == GATE_PRODUCER and stage[Stage.GATE] < INF:
        for j in range(due):
            local = x.lists[List.DUE, base + j]
            if gate.producer_due(stage, fluid_g, status_g, local, now):
                succeed(q, now, K_MMA, col[Column.PRODUCER, base + local], 0)
    flows(*s, n, now, False)
    d = x.drain_i
    if stalls:
        if scope == GATE_LINK:
            fast_stall.link_turn(x, producers, g, n, now, q)
    elif scope == GATE_LINK and d[g, DrainI.GATE_HEAD] >= 0:
        _link_list_turn(x, producers, g, n, now, q, DrainF.GATE_KEY, DrainI.GATE_HEAD, DrainI.GATE_TAIL)
    elif scope == GATE_FIFO or scope == GATE_FIFO_LINK:
        if d[g, DrainI.GATE_HEAD] >= 0:
            _fifo_turn(x, producers, g, n, now, q, scope == GATE_FIFO_LINK)
        if d[g, DrainI.THEN_HEAD] >= 0:   # fifo-link: past the fence, at the link gate
            _link_list_turn(x, producers, g, n, now, q, DrainF.THEN_KEY, DrainI.THEN_HEAD, DrainI.THEN_TAIL)


@inline
def _fifo_turn(x, producers, g, n, now, q, then_link):
    """XStage._fifo_turn: advance the stage's accepted bytes, release the waiters at their target
    from the head (in the order they began to wait; fifo-link: on to the link gate), key the new head."""
    stage, _, fluid_g, status_g, _, _ = fluid_stage(x, g)
    d, df, pi, pf = x.drain_i, x.drain_f, producers.i, producers.f
    acc = gate.fifo_acc(df[g, DrainF.ACC], df[g, DrainF.ACC_T], df[g, DrainF.ACC_RATE], now)
    total, slope, accept = gate.fifo_motion(stage, fluid_g, status_g, n, now)
    df[g, DrainF.ACC], df[g, DrainF.ACC_T], df[g, DrainF.ACC_RATE] = acc, now, accept
    p = d[g, DrainI.GATE_HEAD]
    threshold = gate.fifo_threshold(stage, then_link)
    excess = gate.fifo_excess(total, acc, pf[p, ProducerF.GATE_ACC], threshold)
    bound = gate.fifo_bound(excess, df[g, DrainF.GATE_KEY], now)
    while excess <= bound:
        nxt = pi[p, ProducerI.GATE_NEXT]
        _past_fence(x, producers, g, p, total, now, q, then_link)
        p = nxt
        if p < 0:
            break
        excess = gate.fifo_excess(total, acc, pf[p, ProducerF.GATE_ACC], threshold)
    d[g, DrainI.GATE_HEAD], df[g, DrainF.GATE_KEY] = p, INF
    if p < 0:
        d[g, DrainI.GATE_TAIL] = -1
    else:
        df[g, DrainF.GATE_KEY] = gate.fifo_key(now, excess, slope, accept)


@inline
def _past_fence(x, producers, g, p, total, now, q, then_link):
    """XStage._past_fence: producer p at its fifo target starts (fifo, or the link gate open at the
    total q ``total``) or joins the link gate's waiters (fifo-link)."""
    d, pi = x.drain_i, producers.i
    if not then_link or total <= x.stage[g][Stage.GATE]:
        succeed(q, now, K_MMA, p, 0)
        return
    if d[g, DrainI.THEN_HEAD] < 0:
        x.drain_f[g, DrainF.THEN_KEY] = INF
        d[g, DrainI.THEN_HEAD] = p
    else:
        pi[d[g, DrainI.THEN_TAIL], ProducerI.GATE_NEXT] = p
    d[g, DrainI.THEN_TAIL], pi[p, ProducerI.GATE_NEXT] = p, -1


@inline
def _link_list_turn(x, producers, g, n, now, q, key, head, tail):
    """A link-scope list of waiters (the stage's, or fifo-link's past the fence: DrainF ``key``,
    DrainI ``head`` .. ``tail``): release them together once the total q is at or below the
    threshold or their crossing key is due, else key the crossing (XStage._link_turn)."""
    stage, _, fluid_g, status_g, _, _ = fluid_stage(x, g)
    d = x.drain_i
    released, x.drain_f[g, key] = gate.link_turn(stage, fluid_g, status_g, n, now, x.drain_f[g, key])
    if released:
        p = d[g, head]
        while p >= 0:
            succeed(q, now, K_MMA, p, 0)
            p = producers.i[p, ProducerI.GATE_NEXT]
        d[g, head] = d[g, tail] = -1


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
def drain_turn(x, tiles, producers, g, now, q, tracing, scope, stalls):
    """One turn of XStage.drain's loop: advance, settle, q breakpoint, then sleep until the next
    fluid event or link- or fifo-scope gate crossing (a timer) or a wake. Returns True if the q(t)
    trace got a new breakpoint."""
    d, df = x.drain_i, x.drain_f
    fluid.advance(x.stage[g], now)
    _settle(x, tiles, producers, g, now, q, scope, stalls)
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
    if (scope >= GATE_LINK and d[g, DrainI.GATE_HEAD] >= 0 and not stalls) or \
            (stalls and scope == GATE_LINK and d[g, DrainI.STALL_COUNT] > 0):  # link or fifo; link stall
        dt = min(dt, max(df[g, DrainF.GATE_KEY] - now, 0.0))
    if d[g, DrainI.THEN_HEAD] >= 0:   # fifo-link: past the fence, at the link gate
        dt = min(dt, max(df[g, DrainF.THEN_KEY] - now, 0.0))
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
