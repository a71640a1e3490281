"""The fast engine: the SimPy engine's processes as one numba event loop.

Same entities and rules as :mod:`xsim.des.simpy_engine` and the same order of same-time
events. The loop keeps SimPy's event queue, ordered by (time, priority, insertion number),
and schedules an entry wherever SimPy schedules an event that does something, so every
process resumes in SimPy's order and the fluid arithmetic (the functions of
:mod:`xsim.des.fluid`, compiled by numba from the same source) runs on the same operands.
Each SimPy process becomes a state machine with a program counter:

- ``mma`` (compute role): release time, counter wait, staging-slot get, mainloop, put the
  finished tile into the issuer's FIFO;
- ``issuer`` (epilogue role): take a tile, epilogue, inject into the X-Stage and wait for
  the issue to end, signal, (completion-coupled: wait for the tile's last byte), free a slot;
- ``drain`` (one per X-Stage): advance the fluid, settle issuers and drain marks, sleep until
  the next boundary (a timer) or until an issuer wakes it.

Entries SimPy schedules without effect (a process's end, a drain timeout whose condition has
already fired) are left out: that does not change the relative order of the others. Each
drain's pending timeout lives in a per-stage timer slot, and events triggered "now" go to a
FIFO ring rather than the heap; merging by (time, key) keeps SimPy's order exactly, so the
results are equal bit for bit (the tests allow 1e-9).

State is a few 2-D arrays with named rows or columns: queue ``qt``/``qk``/``ctr``; per stage
``sf``/``si``; active issuers ``ihf``/``ihi``; per tile ``tf``/``ti`` (workload inputs and
results); per producer ``pi``/``pf``; per counter ``ci``. The kernel alone is cached
(``cache=True``); its cache file carries a digest of fluid.py, whose functions it links in.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import types

import numba
import numpy as np

from xsim.des import fluid
from xsim.des.result import SimResult, TileTimes
from xsim.des.simpy_engine import _check_finished
from xsim.workload import Workload, XStageParams


def _jit_fluid() -> dict:
    """numba twins of fluid's functions: the same code objects, their calls bound to the twins."""
    namespace = dict(vars(fluid))
    for name, py in vars(fluid).items():
        if inspect.isfunction(py) and py.__module__ == fluid.__name__:
            twin = types.FunctionType(py.__code__, namespace, name, py.__defaults__)
            namespace[name] = numba.njit(twin)
    return namespace


_fl = _jit_fluid()  # numba resolves module globals only, so bind the twins to names:
_advance, _snap, _due, _progress = _fl["advance"], _fl["snap"], _fl["due"], _fl["progress"]
_to_boundary, _to_finish, _to_drained = _fl["time_to_boundary"], _fl["time_to_finish"], _fl["time_to_drained"]
_fl_shares = _fl["shares"]


INF = math.inf
INT_MAX = np.iinfo(np.int64).max
URGENT, NORMAL = 0, 1          # SimPy's priorities: Initialize is urgent, everything else normal
PRIO_SHIFT = 1 << 62           # queue key = priority * PRIO_SHIFT + insertion number
K_MMA, K_ISSUER, K_STORE_PUT, K_STORE_GET, K_SLOT_PUT, K_DRAINED, K_WAKE, K_DRAIN = range(8)  # entry kinds
Q_KEY, Q_KIND, Q_ARG, Q_GEN = range(4)                      # qk columns
C_LEN, C_EID, C_RING_HEAD, C_RING_N = range(4)              # ctr
F_Q, F_DRAINED, F_SERVICE, F_INFLOW, F_T_LAST, F_TRACE_T, F_TRACE_Q, F_TIMER, F_CAP, F_RATE = range(10)
I_GEN, I_MODE, I_COND, I_WOKEN, I_ACTIVE, I_SIZE, I_MARK_HEAD, I_MARK_TAIL, I_TIMER_KEY, I_BASE = range(10)
MODE_WAKE_ONLY, MODE_COND = 1, 2   # the drain sleeps on its wake event / on (timeout | wake)
H_LEFT, H_RATE, H_WEIGHT, H_PHI = range(4)   # ihf rows: the active issuers' floats
H_PRODUCER, H_TILE = range(2)                # ihi rows
# tf rows: TileTimes fields in order, then the drain mark and the workload's float columns
(T_ML_START, T_ML_END, T_ISS_START, T_ISS_END, T_DRAIN_END, T_STALL, T_DEP_WAIT, T_MARK,
 T_MAINLOOP, T_EPILOGUE, T_BYTES, T_ISS0, T_RELEASE) = range(13)
# ti rows; a drained event is named by the tile that created it, its callbacks are a linked list
(U_PRODUCER, U_WAIT, U_WAIT_VALUE, U_SIGNAL, U_SIGNAL_ON_DRAIN, U_MARK_NEXT, U_DRAINED, U_CB_HEAD, U_CB_TAIL,
 U_CB_NEXT) = range(10)
DR_NONE, DR_SCHEDULED, DR_PROCESSED = range(3)
# pi columns: stream bounds and GPU; compute role; slots and FIFO; issuer; counter wait list
(P_FIRST, P_END, P_GPU, P_MMA_PC, P_MMA_TILE, P_MMA_GETTING, P_LEVEL, P_FIFO_HEAD, P_FIFO_TAIL,
 P_ISS_PC, P_ISS_TILE, P_ISS_GETTING, P_ISS_DONE, P_WAIT_NEXT, P_WAIT_VALUE, P_LAST_REMOTE, P_EVENT) = range(17)
PF_READY, PF_DEPS_MET, PF_WEIGHT = range(3)
CI_VALUE, CI_HEAD, CI_TAIL, CI_MIN_WAIT = range(4)  # CI_MIN_WAIT: lowest threshold waited on
# program counters: each role sits at the point after the event it waits for
M_START, M_RELEASED, M_DEPS, M_SLOT, M_MAIN, M_PUT, DONE = range(7)
S_START, S_GOT, S_EPILOGUE, S_ISSUED, S_DRAINED, S_PUT = range(6)


# ---- the event queue: a heap for timeouts, a FIFO ring for events triggered "now" ---------------
# Entries triggered at the current time carry the largest keys so far, so a FIFO keeps them sorted
# and merging its head with the heap's top by (time, key) gives exactly SimPy's order.

@numba.njit(_nrt=False, inline="always")
def _before(qt, qk, a, b):
    return qt[a] < qt[b] or (qt[a] == qt[b] and qk[a, Q_KEY] < qk[b, Q_KEY])


@numba.njit(_nrt=False, inline="always")
def _swap(qt, qk, a, b):
    qt[a], qt[b] = qt[b], qt[a]
    for c in range(4):
        qk[a, c], qk[b, c] = qk[b, c], qk[a, c]


@numba.njit(_nrt=False, inline="always")
def _put(qt, qk, ctr, j, t, prio, kind, arg, gen):
    qt[j] = t
    qk[j, Q_KEY], qk[j, Q_KIND], qk[j, Q_ARG], qk[j, Q_GEN] = prio * PRIO_SHIFT + ctr[C_EID], kind, arg, gen
    ctr[C_EID] += 1


@numba.njit(_nrt=False)
def _timeout(qt, qk, ctr, t, kind, arg):
    """``env.timeout``: a heap entry at time ``t``."""
    n = ctr[C_LEN]
    if n == qt.shape[0] // 2:
        raise RuntimeError("fast engine: event heap overflow")
    _put(qt, qk, ctr, n, t, NORMAL, kind, arg, 0)
    ctr[C_LEN] = n + 1
    while n > 0 and _before(qt, qk, n, (n - 1) // 2):
        _swap(qt, qk, n, (n - 1) // 2)
        n = (n - 1) // 2


@numba.njit(_nrt=False, inline="always")
def _ring_push(qt, qk, ctr, now, prio, kind, arg, gen):
    size = qt.shape[0] // 2
    if ctr[C_RING_N] == size:
        raise RuntimeError("fast engine: event ring overflow")
    j = ctr[C_RING_HEAD] + ctr[C_RING_N]
    _put(qt, qk, ctr, size + (j - size if j >= size else j), now, prio, kind, arg, gen)
    ctr[C_RING_N] += 1


@numba.njit(_nrt=False, inline="always")
def _succeed(qt, qk, ctr, now, kind, arg, gen):
    """``event.succeed()``: an entry at the current time, after every one scheduled before it."""
    _ring_push(qt, qk, ctr, now, NORMAL, kind, arg, gen)


@numba.njit(_nrt=False)
def _heap_pop(qt, qk, ctr):
    """Remove the heap's top; returns the slot where its fields can still be read."""
    n = ctr[C_LEN] - 1
    _swap(qt, qk, 0, n)
    ctr[C_LEN] = n
    i = 0
    while 2 * i + 1 < n:
        c = 2 * i + 1
        if c + 1 < n and _before(qt, qk, c + 1, c):
            c += 1
        if not _before(qt, qk, c, i):
            break
        _swap(qt, qk, i, c)
        i = c
    return n


@numba.njit(_nrt=False, inline="always")
def _peek(qt, qk, ctr):
    """Slot of the first entry (heap top or ring head), or -1 if there is none."""
    if ctr[C_RING_N] == 0:
        return 0 if ctr[C_LEN] > 0 else -1
    j = qt.shape[0] // 2 + ctr[C_RING_HEAD]
    return 0 if ctr[C_LEN] > 0 and _before(qt, qk, 0, j) else j


@numba.njit(_nrt=False, inline="always")
def _take(qt, qk, ctr, j):
    """Remove the entry ``_peek`` found; returns the slot where its fields can still be read."""
    if j == 0:
        return _heap_pop(qt, qk, ctr)
    ctr[C_RING_HEAD] = 0 if ctr[C_RING_HEAD] + 1 == qt.shape[0] // 2 else ctr[C_RING_HEAD] + 1
    ctr[C_RING_N] -= 1
    return j


# ---- the fluid X-Stage of one GPU (mirrors simpy_engine.XStage) --------------------------------
# Stage g's active issuers are packed in columns base..base + n of ``ihf`` (bytes left, nominal
# rate, weight, admission) and ``ihi`` (producer, tile), as XStage packs its arrays.

@numba.njit(_nrt=False, inline="always")
def _active(ihf, si):
    """Stage views of the issuer columns: (left, rate, weight, phi), each of the stage's size."""
    lo, hi = si[I_BASE], si[I_BASE] + si[I_SIZE]
    return ihf[H_LEFT, lo:hi], ihf[H_RATE, lo:hi], ihf[H_WEIGHT, lo:hi], ihf[H_PHI, lo:hi]


@numba.njit
def _shares(sf, si_all, g, ihf):
    """XStage._shares. The one call that needs numba's runtime (fluid.shares allocates), so only
    the kernel calls it: a function compiled without the runtime cannot reach it."""
    lo, hi = si_all[g, I_BASE], si_all[g, I_BASE] + si_all[g, I_SIZE]
    _fl_shares(sf[g, F_Q], sf[g, F_CAP], sf[g, F_RATE], sf[g, F_INFLOW], ihf[H_RATE, lo:hi],
               ihf[H_WEIGHT, lo:hi], si_all[g, I_ACTIVE], ihf[H_PHI, lo:hi])


@numba.njit(_nrt=False)
def _stage_advance(f, si, ihf, now):
    dt = now - f[F_T_LAST]
    if dt > 0.0:
        left, rate, weight, phi = _active(ihf, si)
        _progress(left, rate, phi, si[I_ACTIVE], dt)
        f[F_Q], f[F_DRAINED], f[F_SERVICE] = _advance(f[F_Q], f[F_DRAINED], f[F_SERVICE], dt,
                                                         f[F_CAP], f[F_RATE], f[F_INFLOW])
    f[F_T_LAST] = now


@numba.njit(_nrt=False)
def _inject(f, si, ihf, ihi, tf, pf, i, p, g, now, qt, qk, ctr):
    """XStage.inject: producer p starts issuing tile i's bytes and wakes the drain process."""
    _stage_advance(f, si, ihf, now)
    k = si[I_BASE] + si[I_ACTIVE]
    ihf[H_LEFT, k], ihf[H_RATE, k] = tf[T_BYTES, i], tf[T_BYTES, i] / tf[T_ISS0, i]
    ihf[H_WEIGHT, k], ihi[H_PRODUCER, k], ihi[H_TILE, k] = pf[p, PF_WEIGHT], p, i
    si[I_ACTIVE] += 1
    f[F_INFLOW] += ihf[H_RATE, k]  # (the kernel recomputes the admission shares after this)
    if si[I_WOKEN] == 0:
        si[I_WOKEN] = 1
        _succeed(qt, qk, ctr, now, K_WAKE, g, si[I_GEN])


@numba.njit(_nrt=False)
def _finishing(f, si, ihf, ihi, now, due):
    """XStage._finishing: the producers whose issue is due now, in producer order; returns count."""
    left, rate, weight, phi = _active(ihf, si)
    n = 0
    for k in range(si[I_ACTIVE]):
        if _due(_to_finish(left[k], rate[k], phi[k]), now):
            producer, j = ihi[H_PRODUCER, si[I_BASE] + k], n
            while j > 0 and due[j - 1] > producer:  # insertion sort: a handful finish together
                due[j] = due[j - 1]
                j -= 1
            due[j] = producer
            n += 1
    return n


@numba.njit(_nrt=False)
def _remove(si, ihf, ihi, producer):
    """XStage._remove of ``producer``'s issuer (the last one moves into its column); its tile."""
    base, last = si[I_BASE], si[I_BASE] + si[I_ACTIVE] - 1
    k = base
    while ihi[H_PRODUCER, k] != producer:
        k += 1
    tile = ihi[H_TILE, k]
    for c in range(4):
        ihf[c, k] = ihf[c, last]
    for c in range(2):
        ihi[c, k] = ihi[c, last]
    si[I_ACTIVE] -= 1
    return tile


@numba.njit(_nrt=False, inline="always")
def _mark_push(si, tf, ti, tile, value):
    tf[T_MARK, tile], ti[U_MARK_NEXT, tile] = value, -1
    if si[I_MARK_TAIL] >= 0:
        ti[U_MARK_NEXT, si[I_MARK_TAIL]] = tile
    else:
        si[I_MARK_HEAD] = tile
    si[I_MARK_TAIL] = tile


@numba.njit(_nrt=False, inline="always")
def _time_to_mark(f, si, tf):
    """Time until the stage's oldest drain mark is reached (XStage._time_to_drained)."""
    return _to_drained(tf[T_MARK, si[I_MARK_HEAD]], f[F_DRAINED], f[F_Q], f[F_CAP], f[F_RATE], f[F_INFLOW])


@numba.njit(_nrt=False)
def _settle(f, si, ihf, ihi, tf, ti, due, now, qt, qk, ctr):
    """XStage._settle: finish every issuer and drain mark that is due at this instant."""
    f[F_Q], f[F_DRAINED] = _snap(f[F_Q], f[F_DRAINED], f[F_CAP], f[F_RATE], f[F_INFLOW], now)
    for m in range(_finishing(f, si, ihf, ihi, now, due)):
        k = si[I_BASE]
        while ihi[H_PRODUCER, k] != due[m]:
            k += 1
        f[F_INFLOW] = f[F_INFLOW] - ihf[H_RATE, k] if si[I_ACTIVE] > 1 else 0.0
        tile = _remove(si, ihf, ihi, due[m])
        _mark_push(si, tf, ti, tile, f[F_DRAINED] + f[F_Q])
        _succeed(qt, qk, ctr, now, K_ISSUER, due[m], 0)
    while si[I_MARK_HEAD] >= 0 and _due(_time_to_mark(f, si, tf), now):
        tile = si[I_MARK_HEAD]
        si[I_MARK_HEAD] = ti[U_MARK_NEXT, tile]
        if si[I_MARK_HEAD] < 0:
            si[I_MARK_TAIL] = -1
        _succeed(qt, qk, ctr, now, K_DRAINED, tile, 0)
        ti[U_DRAINED, tile] = DR_SCHEDULED


@numba.njit(_nrt=False)
def _next_boundary(f, si, ihf, tf):
    dt = _to_boundary(f[F_Q], f[F_CAP], f[F_RATE], f[F_INFLOW])
    left, rate, weight, phi = _active(ihf, si)
    for k in range(si[I_ACTIVE]):
        x = _to_finish(left[k], rate[k], phi[k])
        dt = x if x < dt else dt
    if si[I_MARK_HEAD] >= 0:
        x = _time_to_mark(f, si, tf)
        dt = x if x < dt else dt
    return dt


@numba.njit(_nrt=False)
def _drain_wake(f, si, ihf, ihi, tf, ti, due, now, qt, qk, ctr):
    """XStage.drain's loop, first half: advance and settle (the kernel then updates the shares)."""
    _stage_advance(f, si, ihf, now)
    _settle(f, si, ihf, ihi, tf, ti, due, now, qt, qk, ctr)


@numba.njit(_nrt=False)
def _drain_sleep(f, si, ihf, tf, now, ctr):
    """XStage.drain's loop, second half: q breakpoint (True if new), then sleep until the next
    boundary (a timer) or a wake."""
    point = now > f[F_TRACE_T] or f[F_Q] != f[F_TRACE_Q]
    if point:
        f[F_TRACE_T], f[F_TRACE_Q] = now, f[F_Q]
    si[I_GEN] += 1
    si[I_WOKEN], si[I_COND] = 0, 0
    dt = _next_boundary(f, si, ihf, tf)
    if dt == INF:
        si[I_MODE], f[F_TIMER] = MODE_WAKE_ONLY, INF
    else:
        si[I_MODE], si[I_COND] = MODE_COND, 1
        f[F_TIMER], si[I_TIMER_KEY] = now + dt, NORMAL * PRIO_SHIFT + ctr[C_EID]
        ctr[C_EID] += 1
    return point


@numba.njit(_nrt=False, inline="always")
def _fire_condition(si, g, now, qt, qk, ctr):
    """The drain's timeout or wake reached its (timeout | wake) condition."""
    if si[I_COND] == 1:
        si[I_COND] = 0
        _succeed(qt, qk, ctr, now, K_DRAIN, g, si[I_GEN])


# ---- counters, staging slots and the finished-tile FIFO (SimPy's Container and Store) ----------

@numba.njit(_nrt=False)
def _counter_wait(pi, ci, p, c, value, now, qt, qk, ctr):
    if ci[c, CI_VALUE] >= value:
        _succeed(qt, qk, ctr, now, K_MMA, p, 0)
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
            _succeed(qt, qk, ctr, now, K_MMA, p, 0)
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
        _succeed(qt, qk, ctr, now, K_MMA, p, 0)
    else:
        pi[p, P_MMA_GETTING] = 1


@numba.njit(_nrt=False, inline="always")
def _fifo_get(pi, p, now, qt, qk, ctr):
    """Store.get(): the oldest finished tile, at once if there is one, else when a put is processed."""
    if pi[p, P_FIFO_HEAD] < pi[p, P_FIFO_TAIL]:
        pi[p, P_ISS_TILE] = pi[p, P_FIFO_HEAD]
        pi[p, P_FIFO_HEAD] += 1
        pi[p, P_ISS_GETTING] = 0
        _succeed(qt, qk, ctr, now, K_STORE_GET, p, 0)
    else:
        pi[p, P_ISS_GETTING] = 1


# ---- the two roles of a producer (mirror simpy_engine.run's mma and issuer) --------------------

@numba.njit(_nrt=False)
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
                _timeout(qt, qk, ctr, now + (tf[T_RELEASE, i] - now), K_MMA, p)
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
            _timeout(qt, qk, ctr, now + tf[T_MAINLOOP, i], K_MMA, p)
            return
        elif pc == M_MAIN:
            tf[T_ML_END, i] = now
            pi[p, P_FIFO_TAIL] += 1  # Store.put: the item is in the FIFO at once
            pi[p, P_MMA_PC] = M_PUT
            _succeed(qt, qk, ctr, now, K_STORE_PUT, p, 0)
            return
        else:  # M_PUT
            pi[p, P_MMA_PC], pi[p, P_MMA_TILE] = M_START, i + 1


@numba.njit(_nrt=False)
def _issuer_run(pi, pf, ci, sf, si, ihf, ihi, tf, ti, coupled, p, now, qt, qk, ctr):
    """Resume producer p's epilogue role until it waits on an event; returns the stage it injected
    into (whose admission shares are then stale), or -1."""
    while True:
        pc, i = pi[p, P_ISS_PC], pi[p, P_ISS_TILE]
        if pc == S_START:
            if pi[p, P_ISS_DONE] == pi[p, P_END] - pi[p, P_FIRST]:
                pi[p, P_ISS_PC] = DONE
                return -1
            pi[p, P_ISS_PC] = S_GOT
            _fifo_get(pi, p, now, qt, qk, ctr)
            return -1
        elif pc == S_GOT:
            tf[T_ISS_START, i] = now
            pi[p, P_ISS_PC] = S_EPILOGUE
            if tf[T_EPILOGUE, i] > 0:
                _timeout(qt, qk, ctr, now + tf[T_EPILOGUE, i], K_ISSUER, p)
                return -1
        elif pc == S_EPILOGUE:
            pi[p, P_ISS_PC] = S_ISSUED
            if tf[T_BYTES, i] > 0:
                g = pi[p, P_GPU]
                pi[p, P_LAST_REMOTE], pi[p, P_EVENT] = i, i
                _inject(sf[g], si[g], ihf, ihi, tf, pf, i, p, g, now, qt, qk, ctr)
                return g
            last = pi[p, P_LAST_REMOTE]
            if last >= 0 and ti[U_DRAINED, last] != DR_PROCESSED:
                pi[p, P_EVENT] = last  # a local tile completes when the producer's stores have drained
            else:
                pi[p, P_EVENT] = i
                _succeed(qt, qk, ctr, now, K_DRAINED, i, 0)
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
                return -1
        elif pc == S_DRAINED:
            pi[p, P_LEVEL] += 1  # Container.put(1): a slot is always free to return
            pi[p, P_ISS_PC] = S_PUT
            _succeed(qt, qk, ctr, now, K_SLOT_PUT, p, 0)
            return -1
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

@numba.njit(_nrt=False)
def _process(kind, arg, gen, now, pi, pf, ci, sf, si, ihf, ihi, tf, ti, due, coupled, qt, qk, ctr):
    """Run one entry's callbacks. Returns g >= 0 if stage g's drain woke (advanced and settled),
    -2 - g if an issuer injected into stage g, else -1: in both cases the kernel then updates
    the stage's admission shares (they need numba's runtime; these functions do not)."""
    if kind == K_MMA:
        _mma_run(pi, pf, ci, tf, ti, arg, now, qt, qk, ctr)
    elif kind == K_ISSUER or kind == K_STORE_GET:
        return -2 - _issuer_run(pi, pf, ci, sf, si, ihf, ihi, tf, ti, coupled, arg, now, qt, qk, ctr)
    elif kind == K_STORE_PUT:  # callbacks: Store._trigger_get, then the mma resumes
        if pi[arg, P_ISS_GETTING] == 1:
            _fifo_get(pi, arg, now, qt, qk, ctr)
        _mma_run(pi, pf, ci, tf, ti, arg, now, qt, qk, ctr)
    elif kind == K_SLOT_PUT:  # callbacks: Container._trigger_get, then the issuer resumes
        if pi[arg, P_MMA_GETTING] == 1:
            pi[arg, P_MMA_GETTING] = 0
            _slot_get(pi, arg, now, qt, qk, ctr)
        return -2 - _issuer_run(pi, pf, ci, sf, si, ihf, ihi, tf, ti, coupled, arg, now, qt, qk, ctr)
    elif kind == K_DRAINED:  # callbacks: on_drained, then (completion-coupled) the issuer resumes
        _drained_processed(pi, ci, ti, tf, arg, now, qt, qk, ctr)
        p = ti[U_PRODUCER, arg]
        if coupled and pi[p, P_ISS_PC] == S_DRAINED and pi[p, P_EVENT] == arg:
            return -2 - _issuer_run(pi, pf, ci, sf, si, ihf, ihi, tf, ti, coupled, p, now, qt, qk, ctr)
    elif kind == K_WAKE:
        if gen == si[arg, I_GEN]:
            if si[arg, I_MODE] != MODE_WAKE_ONLY:
                _fire_condition(si[arg], arg, now, qt, qk, ctr)
            else:
                _drain_wake(sf[arg], si[arg], ihf, ihi, tf, ti, due, now, qt, qk, ctr)
                return arg
    else:  # K_DRAIN
        _drain_wake(sf[arg], si[arg], ihf, ihi, tf, ti, due, now, qt, qk, ctr)
        return arg
    return -1


@numba.njit(_nrt=False)
def _fire_condition_of(si, g, now, qt, qk, ctr):
    _fire_condition(si[g], g, now, qt, qk, ctr)


@numba.njit(_nrt=False)
def _drain_sleep_of(sf, si, g, ihf, tf, now, ctr):
    return _drain_sleep(sf[g], si[g], ihf, tf, now, ctr)


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
    return j < 0 or t < qt[j] or (t == qt[j] and si[g, I_TIMER_KEY] < qk[j, Q_KEY])


def _kernel(pi, pf, ci, sf, si, ihf, ihi, tf, ti, due, coupled, qt, qk, ctr, trace_t, trace_q, trace_g, n):
    """Run the processes until none is left or the trace buffers are full; returns the number of
    q(t) breakpoints (t, q, stage) written so far. Called again, it resumes where it stopped."""
    if ctr[C_EID] == 0:  # SimPy creates the X-Stages' drains, then each producer's two roles
        for g in range(sf.shape[0]):
            _ring_push(qt, qk, ctr, 0.0, URGENT, K_DRAIN, g, 0)
        for p in range(pi.shape[0]):
            _ring_push(qt, qk, ctr, 0.0, URGENT, K_MMA, p, 0)
            _ring_push(qt, qk, ctr, 0.0, URGENT, K_ISSUER, p, 0)
    while n < trace_t.shape[0]:
        g, j = _next_timer(sf, si), _peek(qt, qk, ctr)
        if _timer_first(sf, si, g, qt, qk, j):
            now = sf[g, F_TIMER]
            sf[g, F_TIMER] = INF
            _fire_condition_of(si, g, now, qt, qk, ctr)
            continue
        if j < 0:
            break
        j = _take(qt, qk, ctr, j)
        now = qt[j]
        r = _process(qk[j, Q_KIND], qk[j, Q_ARG], qk[j, Q_GEN], now,
                     pi, pf, ci, sf, si, ihf, ihi, tf, ti, due, coupled, qt, qk, ctr)
        g = r if r >= 0 else -2 - r
        if g >= 0:
            _shares(sf, si, g, ihf)
        if r >= 0 and _drain_sleep_of(sf, si, r, ihf, tf, now, ctr):
            trace_t[n], trace_q[n], trace_g[n] = now, sf[r, F_Q], r
            n += 1
    return n


def _fluid_digest() -> str:
    return hashlib.sha1(inspect.getsource(fluid).encode()).hexdigest()[:12]


# The one cached compile. Its cache file is named after fluid.py's digest, so editing the shared
# arithmetic recompiles the loop (numba's own stamp covers only this file).
_kernel.__qualname__ = f"_kernel_fluid_{_fluid_digest()}"
_kernel = numba.njit(cache=True)(_kernel)


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


def _producer_arrays(w: Workload) -> tuple[np.ndarray, np.ndarray]:
    pi = np.zeros((w.n_producers, 17), np.int64)
    pi[:, P_FIRST] = pi[:, P_MMA_TILE] = pi[:, P_FIFO_HEAD] = pi[:, P_FIFO_TAIL] = w.offsets[:-1]
    pi[:, P_END], pi[:, P_GPU], pi[:, P_LEVEL], pi[:, P_WAIT_NEXT] = w.offsets[1:], w.producer_gpu, w.slots, -1
    pi[:, P_LAST_REMOTE] = -1
    pf = np.zeros((w.n_producers, 3))
    pf[:, PF_WEIGHT] = w.producer_weight
    return pi, pf


def _stage_arrays(w: Workload) -> tuple[np.ndarray, np.ndarray]:
    n_g = len(w.xstages)
    sf = np.zeros((n_g, 10))
    sf[:, F_TIMER] = INF
    sf[:, F_CAP] = [x.capacity_bytes for x in w.xstages]
    sf[:, F_RATE] = [x.drain_bytes_per_us for x in w.xstages]
    si = np.zeros((n_g, 10), np.int64)
    si[:, I_MARK_HEAD] = si[:, I_MARK_TAIL] = -1
    si[:, I_SIZE] = np.bincount(w.producer_gpu, minlength=n_g)
    si[:, I_BASE] = np.concatenate([[0], np.cumsum(si[:, I_SIZE])[:-1]])
    return sf, si


def _arrays(w: Workload) -> tuple:
    """The kernel's arguments: the workload and the initial state of every entity."""
    tf, ti = _tile_arrays(w)
    sf, si = _stage_arrays(w)
    pi, pf = _producer_arrays(w)
    ci = np.zeros((w.n_counters, 4), np.int64)
    ci[:, CI_HEAD] = ci[:, CI_TAIL] = -1
    ci[:, CI_MIN_WAIT] = INT_MAX
    ihf = np.zeros((4, w.n_producers))
    ihf[H_PHI] = 1.0
    queue = 8 * w.n_producers + 8 * len(w.xstages) + 1024  # live entries: a few per process, with room
    return (pi, pf, ci, sf, si, ihf, np.zeros((2, w.n_producers), np.int64), tf, ti,
            np.zeros(w.n_producers, np.int64), w.coupling == "completion-coupled",
            np.zeros(2 * queue), np.zeros((2 * queue, 4), np.int64), np.zeros(4, np.int64))


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
    args = _arrays(w)
    trace_t, trace_q, trace_g = _run_kernel(args, w.n_tiles)
    ci, tf = args[2], args[7]
    times = TileTimes(*(tf[row].copy() for row in range(T_DEP_WAIT + 1)))
    _check_finished(w, times, types.SimpleNamespace(value=ci[:, CI_VALUE].tolist()))
    traces = [None] * len(w.xstages)
    if trace:
        traces = [(np.concatenate([[0.0], trace_t[trace_g == g]]), np.concatenate([[0.0], trace_q[trace_g == g]]))
                  for g in range(len(w.xstages))]
    return SimResult(workload=w, times=times, traces=traces, engine="fast")


def warm_up() -> None:
    """Compile the kernel (or load it from numba's cache) now, e.g. before forking workers."""
    tile = np.ones(1)
    run(Workload(offsets=np.array([0, 1]), producer_gpu=np.zeros(1, np.int64), kind=np.zeros(1, np.int64),
                 mainloop_us=tile, epilogue_us=tile, bytes=tile, t_iss0_us=tile, release_us=tile,
                 wait_counter=-np.ones(1, np.int64), wait_value=np.zeros(1, np.int64),
                 signal_counter=-np.ones(1, np.int64), xstages=(XStageParams(1.0, 1.0),)), trace=False)
