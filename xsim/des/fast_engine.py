"""The fast engine: the SimPy engine's processes as one numba event loop.

Same entities and rules as :mod:`xsim.des.simpy_engine` and the same order of same-time
events. The loop keeps SimPy's event queue (:mod:`xsim.des.event_queue`) and schedules an
entry wherever SimPy schedules an event that does something, so every process resumes in
SimPy's order and the fluid arithmetic (the functions of :mod:`xsim.des.fluid`, compiled by
numba from the same source) runs on the same operands. Each SimPy process becomes a state
machine with a program counter:

- ``mma`` (compute role): release time, counter wait, staging-slot get, mainloop, put the
  finished tile into the issuer's FIFO;
- ``issuer`` (epilogue role): take a tile, epilogue, inject into the X-Stage and wait for
  the issue to end, signal, (completion-coupled: wait for the tile's last byte), free a slot;
- ``drain`` (one per X-Stage): advance the fluid, settle issue ends and drain marks, sleep
  until the next fluid event (a timer) or until an issuer wakes it.

The X-Stage's arithmetic is :mod:`xsim.des.fluid`'s, called exactly as the SimPy engine's
``XStage`` calls it, except that the water-fill examines only its candidates
(``scan_all=False``) and the issue-end and drain-mark loops visit only the producers that
``fluid.snap`` found due; the SimPy engine visits every producer. Equal results show that
nothing was missed.

Entries SimPy schedules without effect (a process's end, a drain timeout whose condition has
already fired) are left out: that does not change the relative order of the others. Each
drain's pending timeout lives in a per-stage timer slot, merged with the queue by (time, key),
so the results are equal bit for bit (the tests allow 1e-9).

State is a few 2-D arrays with named rows or columns: per stage the fluid's scalars
``fs``/``fc`` and the drain's ``sf``/``si``; per producer column of its stage ``xf``/``xi``
(the fluid's per-producer rows, then the engine's); per tile ``tf``/``ti``
(workload inputs and results); per producer ``pi``/``pf``; per counter ``ci``. Nothing
allocates, so everything, the kernel included, is compiled without numba's runtime
(``_nrt=False``: no reference counting of the ~15 arrays passed on every event), and the
per-entry functions are inlined into the loop (half the cost of an entry; a cold compile of
~20 s instead of ~11 s). The kernel alone is cached (``cache=True``); its cache file carries a digest of fluid.py and
event_queue.py, whose functions it links in.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import types

import numba
import numpy as np

from xsim.des import event_queue, fluid
from xsim.des.event_queue import NORMAL, URGENT, new_key, peek, ring_push, succeed, take, timeout
from xsim.des.result import SimResult, TileTimes
from xsim.des.simpy_engine import _check_finished
from xsim.workload import Workload, XStageParams

_fl = fluid.compiled()  # numba resolves module globals only, so bind the twins to names:
_fl_advance, _fl_start, _fl_flows, _fl_snap = _fl["advance"], _fl["start"], _fl["flows"], _fl["snap"]
_fl_mark_due, _fl_next_event, _fl_fill_q = _fl["mark_due"], _fl["next_event"], _fl["fill_q"]
X_MARK, X_L0, X_D0, X_Q0, X_RATE, X_QNOW = fluid.MARK, fluid.L0, fluid.D0, fluid.Q0, fluid.RATE, fluid.QNOW
Y_DUE = fluid.DUE

INF = math.inf
INT_MAX = np.iinfo(np.int64).max
K_MMA, K_ISSUER, K_STORE_PUT, K_STORE_GET, K_SLOT_PUT, K_DRAINED, K_WAKE, K_DRAIN = range(8)  # entry kinds
F_TRACE_T, F_TRACE_Q, F_TIMER = range(3)                                      # sf columns
I_GEN, I_MODE, I_COND, I_WOKEN, I_SIZE, I_BASE, I_TIMER_KEY = range(7)        # si columns
MODE_WAKE_ONLY, MODE_COND = 1, 2   # the drain sleeps on its wake event / on (timeout | wake)
# xi rows after the fluid's own (xsim.des.fluid.NY): producer, the tile it issues (-1: none),
# its FIFO of drain marks (head, tail)
Y_PRODUCER, Y_ISSUING, Y_MARK_HEAD, Y_MARK_TAIL = range(fluid.NY, fluid.NY + 4)
# tf rows: TileTimes fields in order, then the drain mark and the workload's float columns
(T_ML_START, T_ML_END, T_ISS_START, T_ISS_END, T_DRAIN_END, T_STALL, T_DEP_WAIT, T_MARK,
 T_MAINLOOP, T_EPILOGUE, T_BYTES, T_ISS0, T_RELEASE) = range(13)
# ti rows; a drained event is named by the tile that created it, its callbacks are a linked list
(U_PRODUCER, U_WAIT, U_WAIT_VALUE, U_SIGNAL, U_SIGNAL_ON_DRAIN, U_MARK_NEXT, U_DRAINED, U_CB_HEAD, U_CB_TAIL,
 U_CB_NEXT) = range(10)
DR_NONE, DR_SCHEDULED, DR_PROCESSED = range(3)
# pi columns: stream bounds, GPU and column in its stage; compute role; slots and FIFO; issuer; counter wait
(P_FIRST, P_END, P_GPU, P_COL, P_MMA_PC, P_MMA_TILE, P_MMA_GETTING, P_LEVEL, P_FIFO_HEAD, P_FIFO_TAIL,
 P_ISS_PC, P_ISS_TILE, P_ISS_GETTING, P_ISS_DONE, P_WAIT_NEXT, P_WAIT_VALUE, P_LAST_REMOTE, P_EVENT) = range(18)
PF_READY, PF_DEPS_MET = range(2)
CI_VALUE, CI_HEAD, CI_TAIL, CI_MIN_WAIT = range(4)  # CI_MIN_WAIT: lowest threshold waited on
# program counters: each role sits at the point after the event it waits for
M_START, M_RELEASED, M_DEPS, M_SLOT, M_MAIN, M_PUT, DONE = range(7)
S_START, S_GOT, S_EPILOGUE, S_ISSUED, S_DRAINED, S_PUT = range(6)


# ---- the fluid X-Stage of one GPU (mirrors simpy_engine.XStage) --------------------------------
# Stage g's fluid scalars are row g of ``fs``/``fc``; its producers own columns base..base + size
# of ``xf`` and ``xi``, in producer order, as XStage's arrays (``_cols`` is the stage's view).
# Each producer's drain marks are a FIFO linked through its tiles (``ti[U_MARK_NEXT]``; the
# mark itself in ``tf[T_MARK]``).

@numba.njit(_nrt=False, inline="always")
def _cols(x, si, g):
    return x[:, si[g, I_BASE]:si[g, I_BASE] + si[g, I_SIZE]]


@numba.njit(_nrt=False)
def _inject(fs, fc, si, xf, xi, tf, g, k, tile, now, qt, qk, ctr):
    """XStage.inject: the producer in local column k starts issuing ``tile``'s bytes; wakes the drain,
    whose turn at this instant runs the water-fill."""
    _fl_advance(fs[g], now)
    _fl_start(fs[g], fc[g], _cols(xf, si, g), _cols(xi, si, g), k, tf[T_BYTES, tile],
              tf[T_BYTES, tile] / tf[T_ISS0, tile], now)
    xi[Y_ISSUING, si[g, I_BASE] + k] = tile
    if si[g, I_WOKEN] == 0:
        si[g, I_WOKEN] = 1
        succeed(qt, qk, ctr, now, K_WAKE, g, si[g, I_GEN])


@numba.njit(_nrt=False)
def _settle(fs, fc, si, xf, xi, tf, ti, g, now, qt, qk, ctr):
    """XStage._settle: issue ends in producer order, then each producer's due drain marks; flows.
    Only producers with an event due now can end an issue or pass a mark: the due list."""
    base, x, y = si[g, I_BASE], _cols(xf, si, g), _cols(xi, si, g)
    due = _fl_snap(fs[g], fc[g], x, y, si[g, I_SIZE], now, False)
    for j in range(due):
        k = base + xi[Y_DUE, base + j]
        tile = xi[Y_ISSUING, k]
        if tile >= 0 and xf[X_L0, k] <= 0.0:
            xi[Y_ISSUING, k], xf[X_RATE, k] = -1, 0.0
            tf[T_MARK, tile], ti[U_MARK_NEXT, tile] = xf[X_D0, k] + xf[X_Q0, k], -1
            if xi[Y_MARK_HEAD, k] < 0:
                xi[Y_MARK_HEAD, k] = tile
            else:
                ti[U_MARK_NEXT, xi[Y_MARK_TAIL, k]] = tile
            xi[Y_MARK_TAIL, k] = tile
            succeed(qt, qk, ctr, now, K_ISSUER, xi[Y_PRODUCER, k], 0)
    for j in range(due):
        local = xi[Y_DUE, base + j]
        k = base + local
        tile = xi[Y_MARK_HEAD, k]
        while tile >= 0 and _fl_mark_due(fs[g], x, y, local, tf[T_MARK, tile], now):
            succeed(qt, qk, ctr, now, K_DRAINED, tile, 0)
            ti[U_DRAINED, tile] = DR_SCHEDULED
            tile = ti[U_MARK_NEXT, tile]
        xi[Y_MARK_HEAD, k] = tile
        xf[X_MARK, k] = tf[T_MARK, tile] if tile >= 0 else INF
    _fl_flows(fs[g], fc[g], x, y, si[g, I_SIZE], now, False)


@numba.njit(_nrt=False)
def _sum(a, lo, n):
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
    return _sum(a, lo, half) + _sum(a, lo + half, n - half)


@numba.njit(_nrt=False, inline="always")
def _drain_run(fs, fc, sf, si, xf, xi, tf, ti, g, now, qt, qk, ctr, tracing):
    """One turn of XStage.drain's loop: advance, settle, q breakpoint, then sleep until the next
    fluid event (a timer) or a wake. Returns True if the q(t) trace got a new breakpoint."""
    _fl_advance(fs[g], now)
    _settle(fs, fc, si, xf, xi, tf, ti, g, now, qt, qk, ctr)
    point = False
    if tracing:
        _fl_fill_q(fs[g], fc[g], _cols(xf, si, g), _cols(xi, si, g), si[g, I_SIZE], now, False)
        total = _sum(xf[X_QNOW], si[g, I_BASE], si[g, I_SIZE])
        point = now > sf[g, F_TRACE_T] or total != sf[g, F_TRACE_Q]
        if point:
            sf[g, F_TRACE_T], sf[g, F_TRACE_Q] = now, total
    si[g, I_GEN] += 1
    si[g, I_WOKEN], si[g, I_COND] = 0, 0
    dt = _fl_next_event(fs[g], _cols(xf, si, g), si[g, I_SIZE], now, False)
    if dt == INF:
        si[g, I_MODE], sf[g, F_TIMER] = MODE_WAKE_ONLY, INF
    else:
        si[g, I_MODE], si[g, I_COND] = MODE_COND, 1
        sf[g, F_TIMER], si[g, I_TIMER_KEY] = now + dt, new_key(ctr, NORMAL)
    return point


@numba.njit(_nrt=False)
def _fire_condition(si, g, now, qt, qk, ctr):
    """The drain's timeout or wake reached its (timeout | wake) condition."""
    if si[g, I_COND] == 1:
        si[g, I_COND] = 0
        succeed(qt, qk, ctr, now, K_DRAIN, g, si[g, I_GEN])


# ---- counters, staging slots and the finished-tile FIFO (SimPy's Container and Store) ----------

@numba.njit(_nrt=False)
def _counter_wait(pi, ci, p, c, value, now, qt, qk, ctr):
    if ci[c, CI_VALUE] >= value:
        succeed(qt, qk, ctr, now, K_MMA, p, 0)
        return
    pi[p, P_WAIT_VALUE], pi[p, P_WAIT_NEXT] = value, -1
    if ci[c, CI_TAIL] >= 0:
        pi[ci[c, CI_TAIL], P_WAIT_NEXT] = p
    else:
        ci[c, CI_HEAD] = p
    ci[c, CI_TAIL] = p
    ci[c, CI_MIN_WAIT] = min(ci[c, CI_MIN_WAIT], value)


@numba.njit(_nrt=False)
def _counter_signal(pi, ci, c, now, qt, qk, ctr):
    """Counters.signal: wake, in waiting order, every mainloop whose threshold is now met."""
    ci[c, CI_VALUE] += 1
    if ci[c, CI_VALUE] < ci[c, CI_MIN_WAIT]:
        return  # nobody's threshold is met: the walk would wake no one
    prev, p, lowest = -1, ci[c, CI_HEAD], INT_MAX
    while p >= 0:
        nxt = pi[p, P_WAIT_NEXT]
        if ci[c, CI_VALUE] >= pi[p, P_WAIT_VALUE]:
            succeed(qt, qk, ctr, now, K_MMA, p, 0)
            if prev >= 0:
                pi[prev, P_WAIT_NEXT] = nxt
            else:
                ci[c, CI_HEAD] = nxt
            if ci[c, CI_TAIL] == p:
                ci[c, CI_TAIL] = prev
        else:
            prev, lowest = p, min(lowest, pi[p, P_WAIT_VALUE])
        p = nxt
    ci[c, CI_MIN_WAIT] = lowest


@numba.njit(_nrt=False, inline="always")
def _slot_get(pi, p, now, qt, qk, ctr):
    """Container.get(1): served at once if a slot is free, else when a put is processed."""
    if pi[p, P_LEVEL] >= 1:
        pi[p, P_LEVEL] -= 1
        succeed(qt, qk, ctr, now, K_MMA, p, 0)
    else:
        pi[p, P_MMA_GETTING] = 1


@numba.njit(_nrt=False, inline="always")
def _fifo_get(pi, p, now, qt, qk, ctr):
    """Store.get(): the oldest finished tile, at once if there is one, else when a put is processed."""
    if pi[p, P_FIFO_HEAD] < pi[p, P_FIFO_TAIL]:
        pi[p, P_ISS_TILE] = pi[p, P_FIFO_HEAD]
        pi[p, P_FIFO_HEAD] += 1
        pi[p, P_ISS_GETTING] = 0
        succeed(qt, qk, ctr, now, K_STORE_GET, p, 0)
    else:
        pi[p, P_ISS_GETTING] = 1


# ---- the two roles of a producer (mirror simpy_engine.run's mma and issuer) --------------------

@numba.njit(_nrt=False, inline="always")
def _mma_run(pi, pf, ci, tf, ti, p, now, qt, qk, ctr):
    """Resume producer p's compute role until it waits on an event."""
    while True:
        pc, i = pi[p, P_MMA_PC], pi[p, P_MMA_TILE]
        if pc == M_START:
            if i == pi[p, P_END]:
                pi[p, P_MMA_PC] = DONE
                return
            pi[p, P_MMA_PC] = M_RELEASED
            if tf[T_RELEASE, i] > now:
                timeout(qt, qk, ctr, now + (tf[T_RELEASE, i] - now), K_MMA, p)
                return
        elif pc == M_RELEASED:
            pf[p, PF_READY] = now
            pi[p, P_MMA_PC] = M_DEPS
            if ti[U_WAIT, i] >= 0:
                _counter_wait(pi, ci, p, ti[U_WAIT, i], ti[U_WAIT_VALUE, i], now, qt, qk, ctr)
                return
        elif pc == M_DEPS:
            tf[T_DEP_WAIT, i] = now - pf[p, PF_READY]
            pf[p, PF_DEPS_MET] = now
            pi[p, P_MMA_PC] = M_SLOT
            _slot_get(pi, p, now, qt, qk, ctr)
            return
        elif pc == M_SLOT:
            tf[T_STALL, i] = now - pf[p, PF_DEPS_MET]
            tf[T_ML_START, i] = now
            pi[p, P_MMA_PC] = M_MAIN
            timeout(qt, qk, ctr, now + tf[T_MAINLOOP, i], K_MMA, p)
            return
        elif pc == M_MAIN:
            tf[T_ML_END, i] = now
            pi[p, P_FIFO_TAIL] += 1  # Store.put: the item is in the FIFO at once
            pi[p, P_MMA_PC] = M_PUT
            succeed(qt, qk, ctr, now, K_STORE_PUT, p, 0)
            return
        else:  # M_PUT
            pi[p, P_MMA_PC], pi[p, P_MMA_TILE] = M_START, i + 1


@numba.njit(_nrt=False, inline="always")
def _issuer_run(pi, ci, fs, fc, si, xf, xi, tf, ti, coupled, p, now, qt, qk, ctr):
    """Resume producer p's epilogue role until it waits on an event."""
    while True:
        pc, i = pi[p, P_ISS_PC], pi[p, P_ISS_TILE]
        if pc == S_START:
            if pi[p, P_ISS_DONE] == pi[p, P_END] - pi[p, P_FIRST]:
                pi[p, P_ISS_PC] = DONE
                return
            pi[p, P_ISS_PC] = S_GOT
            _fifo_get(pi, p, now, qt, qk, ctr)
            return
        elif pc == S_GOT:
            tf[T_ISS_START, i] = now
            pi[p, P_ISS_PC] = S_EPILOGUE
            if tf[T_EPILOGUE, i] > 0:
                timeout(qt, qk, ctr, now + tf[T_EPILOGUE, i], K_ISSUER, p)
                return
        elif pc == S_EPILOGUE:
            pi[p, P_ISS_PC] = S_ISSUED
            if tf[T_BYTES, i] > 0:
                g = pi[p, P_GPU]
                pi[p, P_LAST_REMOTE], pi[p, P_EVENT] = i, i
                _inject(fs, fc, si, xf, xi, tf, g, pi[p, P_COL], i, now, qt, qk, ctr)
                return
            last = pi[p, P_LAST_REMOTE]
            if last >= 0 and ti[U_DRAINED, last] != DR_PROCESSED:
                pi[p, P_EVENT] = last  # a local tile completes when the producer's stores have drained
            else:
                pi[p, P_EVENT] = i
                succeed(qt, qk, ctr, now, K_DRAINED, i, 0)
                ti[U_DRAINED, i] = DR_SCHEDULED
        elif pc == S_ISSUED:
            tf[T_ISS_END, i] = now
            if ti[U_SIGNAL, i] >= 0 and ti[U_SIGNAL_ON_DRAIN, i] == 0:
                _counter_signal(pi, ci, ti[U_SIGNAL, i], now, qt, qk, ctr)
            event = pi[p, P_EVENT]
            if ti[U_DRAINED, event] == DR_PROCESSED:
                _on_drained(pi, ci, ti, tf, i, tf[T_DRAIN_END, event], qt, qk, ctr)
            else:
                _add_callback(ti, event, i)
            pi[p, P_ISS_PC] = S_DRAINED
            if coupled and ti[U_DRAINED, event] != DR_PROCESSED:
                return
        elif pc == S_DRAINED:
            pi[p, P_LEVEL] += 1  # Container.put(1): a slot is always free to return
            pi[p, P_ISS_PC] = S_PUT
            succeed(qt, qk, ctr, now, K_SLOT_PUT, p, 0)
            return
        else:  # S_PUT
            pi[p, P_ISS_PC] = S_START
            pi[p, P_ISS_DONE] += 1


@numba.njit(_nrt=False)
def _on_drained(pi, ci, ti, tf, tile, when, qt, qk, ctr):
    """run's on_drained: record the tile's drain end; signal if it signals on drain."""
    tf[T_DRAIN_END, tile] = when
    if ti[U_SIGNAL, tile] >= 0 and ti[U_SIGNAL_ON_DRAIN, tile] == 1:
        _counter_signal(pi, ci, ti[U_SIGNAL, tile], when, qt, qk, ctr)


@numba.njit(_nrt=False, inline="always")
def _add_callback(ti, event, tile):
    """``drained.callbacks.append(lambda: on_drained(tile))``."""
    if ti[U_CB_HEAD, event] < 0:
        ti[U_CB_HEAD, event] = tile
    else:
        ti[U_CB_NEXT, ti[U_CB_TAIL, event]] = tile
    ti[U_CB_TAIL, event] = tile


@numba.njit(_nrt=False)
def _drained_processed(pi, ci, ti, tf, event, now, qt, qk, ctr):
    """A drained event is processed: its on_drained callbacks run in the order they were added."""
    ti[U_DRAINED, event] = DR_PROCESSED
    tile = ti[U_CB_HEAD, event]
    while tile >= 0:
        _on_drained(pi, ci, ti, tf, tile, now, qt, qk, ctr)
        tile = ti[U_CB_NEXT, tile]


# ---- the loop ------------------------------------------------------------------------------------

@numba.njit(_nrt=False, inline="always")
def _process(kind, arg, gen, now, pi, pf, ci, fs, fc, sf, si, xf, xi, tf, ti, coupled, tracing, qt, qk, ctr):
    """Run one entry's callbacks. Returns g >= 0 if stage g's drain ran and added a q(t)
    breakpoint, else -1."""
    if kind == K_MMA:
        _mma_run(pi, pf, ci, tf, ti, arg, now, qt, qk, ctr)
    elif kind == K_ISSUER or kind == K_STORE_GET:
        _issuer_run(pi, ci, fs, fc, si, xf, xi, tf, ti, coupled, arg, now, qt, qk, ctr)
    elif kind == K_STORE_PUT:  # callbacks: Store._trigger_get, then the mma resumes
        if pi[arg, P_ISS_GETTING] == 1:
            _fifo_get(pi, arg, now, qt, qk, ctr)
        _mma_run(pi, pf, ci, tf, ti, arg, now, qt, qk, ctr)
    elif kind == K_SLOT_PUT:  # callbacks: Container._trigger_get, then the issuer resumes
        if pi[arg, P_MMA_GETTING] == 1:
            pi[arg, P_MMA_GETTING] = 0
            _slot_get(pi, arg, now, qt, qk, ctr)
        _issuer_run(pi, ci, fs, fc, si, xf, xi, tf, ti, coupled, arg, now, qt, qk, ctr)
    elif kind == K_DRAINED:  # callbacks: on_drained, then (completion-coupled) the issuer resumes
        _drained_processed(pi, ci, ti, tf, arg, now, qt, qk, ctr)
        p = ti[U_PRODUCER, arg]
        if coupled and pi[p, P_ISS_PC] == S_DRAINED and pi[p, P_EVENT] == arg:
            _issuer_run(pi, ci, fs, fc, si, xf, xi, tf, ti, coupled, p, now, qt, qk, ctr)
    elif kind == K_WAKE:
        if gen == si[arg, I_GEN]:
            if si[arg, I_MODE] != MODE_WAKE_ONLY:
                _fire_condition(si, arg, now, qt, qk, ctr)
            elif _drain_run(fs, fc, sf, si, xf, xi, tf, ti, arg, now, qt, qk, ctr, tracing):
                return arg
    elif _drain_run(fs, fc, sf, si, xf, xi, tf, ti, arg, now, qt, qk, ctr, tracing):  # K_DRAIN
        return arg
    return -1


@numba.njit(_nrt=False, inline="always")
def _next_timer(sf, si):
    best = -1
    for g in range(sf.shape[0]):
        t = sf[g, F_TIMER]
        if t < INF and (best < 0 or t < sf[best, F_TIMER]
                        or (t == sf[best, F_TIMER] and si[g, I_TIMER_KEY] < si[best, I_TIMER_KEY])):
            best = g
    return best


@numba.njit(_nrt=False, inline="always")
def _timer_first(sf, si, g, qt, qk, j):
    """Stage g's drain timer precedes the queue's first entry (slot j, -1 if none)."""
    if g < 0:
        return False
    t = sf[g, F_TIMER]
    return j < 0 or t < qt[j] or (t == qt[j] and si[g, I_TIMER_KEY] < qk[j, event_queue.Q_KEY])


def _kernel(pi, pf, ci, fs, fc, sf, si, xf, xi, tf, ti, coupled, tracing, qt, qk, ctr, trace_t, trace_q, trace_g, n):
    """Run the processes until none is left or the trace buffers are full; returns the number of
    q(t) breakpoints (t, q, stage) written so far. Called again, it resumes where it stopped."""
    if ctr[event_queue.C_EID] == 0:  # SimPy creates the X-Stages' drains, then each producer's two roles
        for g in range(sf.shape[0]):
            ring_push(qt, qk, ctr, 0.0, URGENT, K_DRAIN, g, 0)
        for p in range(pi.shape[0]):
            ring_push(qt, qk, ctr, 0.0, URGENT, K_MMA, p, 0)
            ring_push(qt, qk, ctr, 0.0, URGENT, K_ISSUER, p, 0)
    while n < trace_t.shape[0]:
        g, j = _next_timer(sf, si), peek(qt, qk, ctr)
        if _timer_first(sf, si, g, qt, qk, j):
            now = sf[g, F_TIMER]
            sf[g, F_TIMER] = INF
            _fire_condition(si, g, now, qt, qk, ctr)
            continue
        if j < 0:
            break
        j = take(qt, qk, ctr, j)
        now = qt[j]
        g = _process(qk[j, event_queue.Q_KIND], qk[j, event_queue.Q_ARG], qk[j, event_queue.Q_GEN], now,
                     pi, pf, ci, fs, fc, sf, si, xf, xi, tf, ti, coupled, tracing, qt, qk, ctr)
        if g >= 0:
            trace_t[n], trace_q[n], trace_g[n] = now, sf[g, F_TRACE_Q], g
            n += 1
    return n


def _digest() -> str:
    """Of the modules whose functions the kernel links in (numba's own stamp covers this file only)."""
    source = inspect.getsource(fluid) + inspect.getsource(event_queue)
    return hashlib.sha1(source.encode()).hexdigest()[:12]


# The one cached compile. Its cache file is named after the digest, so editing the shared
# arithmetic or the queue recompiles the loop.
_kernel.__qualname__ = f"_kernel_{_digest()}"
_kernel = numba.njit(cache=True, _nrt=False)(_kernel)


# ---- Python side: arrays in, SimResult out --------------------------------------------------------

def _tile_arrays(w: Workload) -> tuple[np.ndarray, np.ndarray]:
    tf = np.full((13, w.n_tiles), np.nan)
    for row, column in ((T_MAINLOOP, w.mainloop_us), (T_EPILOGUE, w.epilogue_us), (T_BYTES, w.bytes),
                        (T_ISS0, w.t_iss0_us), (T_RELEASE, w.release_us)):
        tf[row] = column
    ti = np.zeros((10, w.n_tiles), np.int64)
    for row, column in ((U_PRODUCER, w.producer), (U_WAIT, w.wait_counter), (U_WAIT_VALUE, w.wait_value),
                        (U_SIGNAL, w.signal_counter), (U_SIGNAL_ON_DRAIN, w.signal_on_drain)):
        ti[row] = column
    ti[U_MARK_NEXT], ti[U_DRAINED], ti[U_CB_HEAD], ti[U_CB_TAIL], ti[U_CB_NEXT] = -1, DR_NONE, -1, -1, -1
    return tf, ti


def _stage_arrays(w: Workload) -> tuple[np.ndarray, ...]:
    """Per stage the fluid's scalars (fs, fc) and the engine's (sf, si); per producer column the
    fluid's rows and the engine's (xf, xi), columns by stage in producer order."""
    n_g = len(w.xstages)
    si = np.zeros((n_g, 7), np.int64)
    si[:, I_SIZE] = np.bincount(w.producer_gpu, minlength=n_g)
    si[:, I_BASE] = np.concatenate([[0], np.cumsum(si[:, I_SIZE])[:-1]])
    sf = np.zeros((n_g, 3))
    sf[:, F_TIMER] = INF
    producers = np.argsort(w.producer_gpu, kind="stable")  # column -> producer
    stages = [fluid.new_stage(x.drain_bytes_per_us, x.capacity_bytes / max(int(n), 1),
                              np.asarray(w.producer_weight, dtype=float)[producers[b:b + n]], extra_y=4)
              for x, b, n in zip(w.xstages, si[:, I_BASE], si[:, I_SIZE])]
    fs, fc = np.stack([s[0] for s in stages]), np.stack([s[1] for s in stages])
    xf, xi = np.concatenate([s[2] for s in stages], axis=1), np.concatenate([s[3] for s in stages], axis=1)
    xi[Y_ISSUING:] = -1
    xi[Y_PRODUCER] = producers
    return fs, fc, sf, si, xf, xi


def _producer_arrays(w: Workload, columns: np.ndarray, bases: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pi = np.zeros((w.n_producers, 18), np.int64)
    pi[:, P_FIRST] = pi[:, P_MMA_TILE] = pi[:, P_FIFO_HEAD] = pi[:, P_FIFO_TAIL] = w.offsets[:-1]
    pi[:, P_END], pi[:, P_GPU], pi[:, P_LEVEL], pi[:, P_WAIT_NEXT] = w.offsets[1:], w.producer_gpu, w.slots, -1
    pi[:, P_LAST_REMOTE] = -1
    pi[columns, P_COL] = np.arange(w.n_producers) - np.repeat(bases, sizes)  # local column in its stage
    return pi, np.zeros((w.n_producers, 2))


def _arrays(w: Workload, trace: bool) -> tuple:
    """The kernel's arguments: the workload and the initial state of every entity."""
    tf, ti = _tile_arrays(w)
    fs, fc, sf, si, xf, xi = _stage_arrays(w)
    pi, pf = _producer_arrays(w, xi[Y_PRODUCER], si[:, I_BASE], si[:, I_SIZE])
    ci = np.zeros((w.n_counters, 4), np.int64)
    ci[:, CI_HEAD] = ci[:, CI_TAIL] = -1
    ci[:, CI_MIN_WAIT] = INT_MAX
    queue = event_queue.empty(8 * w.n_producers + 8 * len(w.xstages) + 1024)  # a few per process, with room
    return (pi, pf, ci, fs, fc, sf, si, xf, xi, tf, ti, w.coupling == "completion-coupled", trace, *queue)


def _run_kernel(args: tuple, n_tiles: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kernel to completion, growing the q(t) breakpoint buffers whenever they fill."""
    size, n = 2 * n_tiles + 64, 0
    trace = (np.empty(size), np.empty(size), np.empty(size, np.int64))
    while True:
        n = _kernel(*args, *trace, n)
        if n < size:
            return tuple(a[:n] for a in trace)
        size *= 2
        trace = tuple(np.concatenate([a, np.empty(size - len(a), a.dtype)]) for a in trace)


def run(workload: Workload, trace: bool = True) -> SimResult:
    """Simulate ``workload`` to completion: the same result as :func:`xsim.des.simpy_engine.run`."""
    w = workload
    args = _arrays(w, trace)
    trace_t, trace_q, trace_g = _run_kernel(args, w.n_tiles)
    ci, si, xf, tf = args[2], args[6], args[7], args[9]
    times = TileTimes(*(tf[row].copy() for row in range(T_DEP_WAIT + 1)))
    _check_finished(w, times, types.SimpleNamespace(value=ci[:, CI_VALUE].tolist()))
    traces = [None] * len(w.xstages)
    if trace:
        traces = [(np.concatenate([[0.0], trace_t[trace_g == g]]), np.concatenate([[0.0], trace_q[trace_g == g]]))
                  for g in range(len(w.xstages))]
    drained = [float(xf[X_D0, base:base + size].sum()) for base, size in si[:, [I_BASE, I_SIZE]]]
    return SimResult(workload=w, times=times, traces=traces, engine="fast", drained_bytes=drained)


def warm_up() -> None:
    """Compile the kernel (or load it from numba's cache) now, e.g. before forking workers."""
    tile = np.ones(1)
    run(Workload(offsets=np.array([0, 1]), producer_gpu=np.zeros(1, np.int64), kind=np.zeros(1, np.int64),
                 mainloop_us=tile, epilogue_us=tile, bytes=tile, t_iss0_us=tile, release_us=tile,
                 wait_counter=-np.ones(1, np.int64), wait_value=np.zeros(1, np.int64),
                 signal_counter=-np.ones(1, np.int64), xstages=(XStageParams(1.0, 1.0),)), trace=False)
