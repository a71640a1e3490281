"""The fast engine: the SimPy engine's processes as one numba event loop.

Same entities and rules as :mod:`xsim.des.simpy_engine` and the same order of same-time
events. The loop keeps SimPy's event queue (:mod:`xsim.des.event_queue`) and schedules an
entry wherever SimPy schedules an event that does something, so every process resumes in
SimPy's order and the fluid arithmetic runs on the same operands: the results are equal bit
for bit. Where each part lives:

- :mod:`xsim.des.fast_state`: the arrays (one declared layout each) and the initial state;
- :mod:`xsim.des.fast_roles`: ``mma`` and ``issuer`` as state machines;
- :mod:`xsim.des.fast_resources`: counters, staging slots, the finished-tile FIFO;
- :mod:`xsim.des.fast_xstage`: the X-Stage and its ``drain`` (advance the fluid, settle issue
  ends and drain marks, sleep until the next fluid event (a timer) or a wake);
- this module: what each entry does (:func:`_process`), the loop, and arrays in, result out.

Entries SimPy schedules without effect (a process's end, a drain timeout whose condition has
already fired) are left out: that does not change the relative order of the others. Each
drain's pending timeout lives in a per-stage timer slot (``DrainF.TIMER``), merged with the
queue by (time, key). Everything is compiled without numba's runtime, the per-entry functions
inlined into the loop; the loop alone is cached (:mod:`xsim.des.jit`'s rules).
"""

from __future__ import annotations

import types

import numpy as np

from xsim.des import event_queue, fast_resources, fast_roles, fast_stall, fast_state, fast_xstage, fluid, \
    fluid_state, gate, layout, min_tree, stall, water_fill
from xsim.des.event_queue import URGENT, Entry, peek, ring_push, take
from xsim.des.fast_roles import ISS_DRAINED, issuer_run, mma_paused, mma_run
from xsim.des.fast_state import (K_DRAIN, K_DRAINED, K_ISSUER, K_MAIN, K_MMA, K_PAUSE, K_SLOT_PUT, K_STORE_GET,
                                 K_STORE_PUT, K_WAKE, N_TIMES, SLEEP_WAKE_ONLY, CounterI, DrainF, DrainI, ProducerI,
                                 TileI, initial_state)
from xsim.des.fast_xstage import INF, drain_turn, fire_condition
from xsim.des.fluid_state import Fluid
from xsim.des.jit import cached_kernel, inline
from xsim.des.result import SimResult, TileTimes
from xsim.des.simpy_engine import _check_finished
from xsim.workload import Workload, XStageParams


@inline
def _process(kind, arg, gen, now, s):
    """Run one entry's callbacks (``arg``: a producer, a tile or a stage, by ``kind``). Returns g
    >= 0 if stage g's drain ran and added a q(t) breakpoint, else -1."""
    pi, x = s.producers.i, s.xstages
    if kind == K_MMA:
        mma_run(s, arg, now)
    elif kind == K_MAIN:  # a mainloop's end at a stall gate; stale if it was paused since
        if gen == pi[arg, ProducerI.MMA_GEN]:
            mma_run(s, arg, now)
    elif kind == K_PAUSE:
        mma_paused(s.producers, arg, now)
    elif kind == K_ISSUER or kind == K_STORE_GET:
        issuer_run(s, arg, now)
    elif kind == K_STORE_PUT:  # callbacks: Store._trigger_get, then the mma resumes
        if pi[arg, ProducerI.ISS_WAITS_TILE] == 1:
            fast_resources.fifo_get(pi, arg, now, s.queue)
        mma_run(s, arg, now)
    elif kind == K_SLOT_PUT:  # callbacks: Container._trigger_get, then the issuer resumes
        if pi[arg, ProducerI.MMA_WAITS_SLOT] == 1:
            pi[arg, ProducerI.MMA_WAITS_SLOT] = 0
            fast_resources.slot_get(pi, arg, now, s.queue)
        issuer_run(s, arg, now)
    elif kind == K_DRAINED:  # callbacks: on_drained, then (completion-coupled) the issuer resumes
        fast_roles.drained_processed(pi, s.counters, s.tiles, arg, now, s.queue)
        p = s.tiles.i[TileI.PRODUCER, arg]
        if s.coupled and pi[p, ProducerI.ISS_PC] == ISS_DRAINED and pi[p, ProducerI.EVENT] == arg:
            issuer_run(s, p, now)
    elif kind == K_WAKE and (gen != x.drain_i[arg, DrainI.GEN] or x.drain_i[arg, DrainI.SLEEP] != SLEEP_WAKE_ONLY):
        if gen == x.drain_i[arg, DrainI.GEN]:  # else a stale wake: the drain has run since
            fire_condition(x.drain_i, arg, now, s.queue)
    elif drain_turn(x, s.tiles, s.producers, arg, now, s.queue, s.tracing, s.gate, s.stall):  # K_DRAIN, or a wake of a drain asleep on it
        return arg
    return -1


@inline
def _next_timer(x):
    """The stage whose drain timer is due first (by time, then key), or -1 if none is set."""
    best, timer, key = -1, x.drain_f, x.drain_i
    for g in range(timer.shape[0]):
        t = timer[g, DrainF.TIMER]
        if t < INF and (best < 0 or t < timer[best, DrainF.TIMER]
                        or (t == timer[best, DrainF.TIMER] and key[g, DrainI.TIMER_KEY] < key[best, DrainI.TIMER_KEY])):
            best = g
    return best


@inline
def _timer_first(x, g, q, j):
    """Stage g's drain timer precedes the queue's first entry (slot j, -1 if none)."""
    if g < 0:
        return False
    t = x.drain_f[g, DrainF.TIMER]
    return j < 0 or t < q.time[j] or (t == q.time[j] and x.drain_i[g, DrainI.TIMER_KEY] < q.entry[j, Entry.KEY])


@cached_kernel(event_queue, fast_resources, fast_roles, fast_stall, fast_state, fast_xstage, fluid, fluid_state, gate,
               layout, min_tree, stall, water_fill)
def _kernel(s, trace_t, trace_q, trace_g, n):
    """Run the processes until none is left or the trace buffers are full; returns the number of
    q(t) breakpoints (t, q, stage) written so far. Called again, it resumes where it stopped."""
    q, x = s.queue, s.xstages
    if q.count[event_queue.Count.NEXT_EID] == 0:  # SimPy creates the X-Stages' drains, then each producer's two roles
        for g in range(x.drain_f.shape[0]):
            ring_push(q, 0.0, URGENT, K_DRAIN, g, 0)
        for p in range(s.producers.i.shape[0]):
            ring_push(q, 0.0, URGENT, K_MMA, p, 0)
            ring_push(q, 0.0, URGENT, K_ISSUER, p, 0)
    while n < trace_t.shape[0]:
        g, j = _next_timer(x), peek(q)
        if _timer_first(x, g, q, j):
            now = x.drain_f[g, DrainF.TIMER]
            x.drain_f[g, DrainF.TIMER] = INF
            fire_condition(x.drain_i, g, now, q)
            continue
        if j < 0:
            break
        j = take(q, j)
        now = q.time[j]
        g = _process(q.entry[j, Entry.KIND], q.entry[j, Entry.ARG], q.entry[j, Entry.GEN], now, s)
        if g >= 0:
            trace_t[n], trace_q[n], trace_g[n] = now, x.drain_f[g, DrainF.TRACE_Q], g
            n += 1
    return n


def _run_kernel(state, n_tiles: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kernel to completion, growing the q(t) breakpoint buffers whenever they fill."""
    size, n = 2 * n_tiles + 64, 0
    trace = (np.empty(size), np.empty(size), np.empty(size, np.int64))
    while True:
        n = _kernel(state, *trace, n)
        if n < size:
            return tuple(a[:n] for a in trace)
        size *= 2
        trace = tuple(np.concatenate([a, np.empty(size - len(a), a.dtype)]) for a in trace)


def run(workload: Workload, trace: bool = True) -> SimResult:
    """Simulate ``workload`` to completion: the same result as :func:`xsim.des.simpy_engine.run`."""
    w = workload
    state = initial_state(w, trace)
    trace_t, trace_q, trace_g = _run_kernel(state, w.n_tiles)
    x = state.xstages
    times = TileTimes(*(state.tiles.f[row].copy() for row in range(N_TIMES)))
    _check_finished(w, times, types.SimpleNamespace(value=state.counters[:, CounterI.VALUE].tolist()))
    traces = [None] * len(w.xstages)
    if trace:
        traces = [(np.concatenate([[0.0], trace_t[trace_g == g]]), np.concatenate([[0.0], trace_q[trace_g == g]]))
                  for g in range(len(w.xstages))]
    drained = [float(x.fluid[Fluid.D0, base:base + size].sum()) for base, size in x.drain_i[:, [DrainI.BASE, DrainI.SIZE]]]
    return SimResult(workload=w, times=times, traces=traces, engine="fast", drained_bytes=drained)


def warm_up() -> None:
    """Compile the kernel (or load it from numba's cache) now, e.g. before forking workers."""
    tile = np.ones(1)
    run(Workload(offsets=np.array([0, 1]), producer_gpu=np.zeros(1, np.int64), kind=np.zeros(1, np.int64),
                 mainloop_us=tile, epilogue_us=tile, bytes=tile, t_iss0_us=tile, release_us=tile,
                 wait_counter=-np.ones(1, np.int64), wait_value=np.zeros(1, np.int64),
                 signal_counter=-np.ones(1, np.int64), xstages=(XStageParams(1.0, 1.0),)), trace=False)
