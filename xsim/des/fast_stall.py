"""The stall gate (:mod:`xsim.des.stall`) on the fast engine's arrays: :mod:`xsim.des.simpy_stall`'s twin.

A producer's mainloop state at the gate is ``ProducerI.STALL``, its work left ``ProducerF.LEFT``
from ``ProducerF.RUN_T``; a pause drops its pending end (a ``K_MAIN`` entry: SimPy's interrupted
timeout stays in its queue, to no effect), bumps ``ProducerI.MMA_GEN`` (an end of an older
generation is stale) and pushes an urgent ``K_PAUSE`` entry (the interrupt). Link scope: the waiting producers are the stage's
load-gate list (``DrainI.GATE_HEAD`` .. ``GATE_TAIL``), ``DrainI.STALL_COUNT`` mainloops are at
the gate, ``DrainF.GATE_KEY`` is the next crossing. Arrival lives with the stage's other gate
checks (:func:`xsim.des.fast_xstage.stall_closed`).
"""

from __future__ import annotations

import math

from xsim.des import gate, stall
from xsim.des.event_queue import heap_remove, ring_push_urgent, succeed
from xsim.des.fast_state import K_MAIN, K_MMA, K_PAUSE, Column, DrainF, DrainI, ProducerF, ProducerI, fluid_stage
from xsim.des.fluid_state import GATE_OFF, GATE_PAST, GATE_WAIT, Fluid, List, Status
from xsim.des.jit import jit
from xsim.des.stall import IDLE, RELEASED, RUNNING, WAITING

INF = math.inf


@jit
def resume(producers, p, now):
    """StallGate.resume: True if producer p's mainloop runs from now (released, or it never
    waited), False if it waits again (paused before it resumed)."""
    pi = producers.i
    if pi[p, ProducerI.STALL] == WAITING:
        return False
    if pi[p, ProducerI.STALL] == RELEASED:
        pi[p, ProducerI.STALL], producers.f[p, ProducerF.RUN_T] = RUNNING, now
    return True


@jit
def finish(x, producers, g, k, p, link):
    """StallGate.finish: producer p's (local column k of stage g) mainloop ended."""
    producers.i[p, ProducerI.STALL] = IDLE
    if link:
        x.drain_i[g, DrainI.STALL_COUNT] -= 1
        if x.drain_i[g, DrainI.STALL_COUNT] == 0:
            x.drain_f[g, DrainF.GATE_KEY] = INF
    else:
        c = x.drain_i[g, DrainI.BASE] + k
        x.status[Status.GATE, c] = GATE_OFF
        x.fluid[Fluid.GV, c], x.fluid[Fluid.GT, c] = INF, INF


@jit
def wait(x, producers, g, p, link):
    """StallGate._wait: producer p waits (link scope: at the end of the stage's list)."""
    pi, d = producers.i, x.drain_i
    pi[p, ProducerI.STALL] = WAITING
    if link:
        if d[g, DrainI.GATE_HEAD] < 0:
            d[g, DrainI.GATE_HEAD] = p
        else:
            pi[d[g, DrainI.GATE_TAIL], ProducerI.GATE_NEXT] = p
        d[g, DrainI.GATE_TAIL], pi[p, ProducerI.GATE_NEXT] = p, -1


@jit
def _pause(x, producers, g, p, now, q, link):
    """StallGate._pause: pause producer p if it is past the gate. Returns whether it waits now."""
    pi, pf = producers.i, producers.f
    state = pi[p, ProducerI.STALL]
    if state == RUNNING:
        if stall.ending(pf[p, ProducerF.RUN_T], pf[p, ProducerF.LEFT], now):
            return False
        pf[p, ProducerF.LEFT] = stall.left_after(pf[p, ProducerF.RUN_T], pf[p, ProducerF.LEFT], now)
        wait(x, producers, g, p, link)
        heap_remove(q, K_MAIN, p, pi[p, ProducerI.MMA_GEN])   # its end, now stale (SimPy's stays, to no effect)
        pi[p, ProducerI.MMA_GEN] += 1
        ring_push_urgent(q, now, K_PAUSE, p, 0)
        return True
    if state == RELEASED:
        wait(x, producers, g, p, link)
        return True
    return False


@jit
def _release(producers, p, now, q):
    producers.i[p, ProducerI.STALL] = RELEASED
    succeed(q, now, K_MMA, p, 0)


@jit
def producer_turn(x, producers, g, due, now, q):
    """StallGate.producer_turn over the ``due`` producers of stage g (the others' keys are not due)."""
    stage, _, fluid_g, status_g, _, _ = fluid_stage(x, g)
    base = x.drain_i[g, DrainI.BASE]
    for j in range(due):
        local = x.lists[List.DUE, base + j]
        if gate.producer_due(stage, fluid_g, status_g, local, now):
            p = x.column[Column.PRODUCER, base + local]
            if producers.i[p, ProducerI.STALL] == WAITING:
                status_g[Status.GATE, local] = GATE_PAST
                _release(producers, p, now, q)
            elif _pause(x, producers, g, p, now, q, False):
                status_g[Status.GATE, local] = GATE_WAIT


@jit
def link_turn(x, producers, g, n, now, q):
    """StallGate.link_turn: decide, pause (in producer order) or release (in waiting order), key."""
    d, df = x.drain_i, x.drain_f
    if d[g, DrainI.STALL_COUNT] == 0:
        return
    stage, _, fluid_g, status_g, _, _ = fluid_stage(x, g)
    shut, df[g, DrainF.GATE_KEY] = stall.link_state(stage, fluid_g, status_g, n, now, df[g, DrainF.GATE_KEY])
    base = d[g, DrainI.BASE]
    if shut:
        for local in range(n):
            _pause(x, producers, g, x.column[Column.PRODUCER, base + local], now, q, True)
    elif d[g, DrainI.GATE_HEAD] >= 0:
        p = d[g, DrainI.GATE_HEAD]
        d[g, DrainI.GATE_HEAD] = d[g, DrainI.GATE_TAIL] = -1
        while p >= 0:
            _release(producers, p, now, q)
            p = producers.i[p, ProducerI.GATE_NEXT]
