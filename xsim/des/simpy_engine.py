"""The reference engine: the X-Stage model as SimPy processes.

Per producer (one CTA): an ``mma`` process (the compute role: waits for its tile's release
time, its counter dependency and a free staging slot, then runs the mainloop) and an
``issuer`` process (the epilogue role: takes finished tiles in order, runs the fixed epilogue,
injects the tile's bytes into its GPU's X-Stage, then frees the staging slot). Per source
GPU: one :class:`XStage` whose ``drain`` process advances the fluid queue from one boundary
to the next. Same-time events run in SimPy's order (FIFO by scheduling); the results do not
depend on that order because the fluid state only changes with elapsed time.
"""

from __future__ import annotations

import heapq

import numpy as np
import simpy

from xsim.des import fluid
from xsim.des.result import SimResult, TileTimes
from xsim.workload import Workload


class SimulationError(RuntimeError):
    """The workload cannot finish (a dependency that is never met)."""


class XStage:
    """One source GPU's fluid X-Stage (see :mod:`xsim.des.fluid`)."""

    def __init__(self, env: simpy.Environment, drain: float, capacity: float, weight: np.ndarray, trace: bool):
        self.env, self.drain_rate, self.capacity, self.weight = env, drain, capacity, weight
        self.q = self.drained = self.service = 0.0
        self.inflow = 0.0
        self.t_last = 0.0
        # the active issuers, packed in the first n slots: bytes left, nominal rate, weight, admission
        size = len(weight)
        self.n = 0
        self.left, self.rate = np.zeros(size), np.zeros(size)
        self.w, self.phi = np.zeros(size), np.ones(size)
        self.who: list = [None] * size  # (producer, issued event, drained event)
        self._marks: list[tuple[float, simpy.Event]] = []  # FIFO, marks non-decreasing
        self.trace_t: list[float] | None = [0.0] if trace else None
        self.trace_q: list[float] = [0.0]
        self._wake = env.event()
        env.process(self.drain())

    def inject(self, producer: int, nbytes: float, t_iss0_us: float) -> tuple[simpy.Event, simpy.Event]:
        """Start issuing ``nbytes``; returns (issue-ended, bytes-drained) events."""
        self._advance()
        issued, drained = self.env.event(), self.env.event()
        k = self.n
        self.left[k], self.rate[k], self.w[k] = nbytes, nbytes / t_iss0_us, self.weight[producer]
        self.who[k] = (producer, issued, drained)
        self.n += 1
        self.inflow += self.rate[k]
        self._shares()
        if not self._wake.triggered:
            self._wake.succeed()
        return issued, drained

    def _shares(self) -> None:
        fluid.shares(self.q, self.capacity, self.drain_rate, self.inflow, self.rate, self.w, self.n, self.phi)

    def _advance(self) -> None:
        dt = self.env.now - self.t_last
        if dt > 0.0:
            fluid.progress(self.left, self.rate, self.phi, self.n, dt)
            self.q, self.drained, self.service = fluid.advance(
                self.q, self.drained, self.service, dt, self.capacity, self.drain_rate, self.inflow)
        self.t_last = self.env.now

    def _finishing(self, now: float) -> list[int]:
        due = [k for k in range(self.n) if fluid.due(fluid.time_to_finish(self.left[k], self.rate[k], self.phi[k]), now)]
        return sorted(due, key=lambda k: self.who[k][0])  # same-instant finishes in producer order

    def _remove(self, k: int) -> None:
        last = self.n - 1
        for array in (self.left, self.rate, self.w, self.phi):
            array[k] = array[last]
        self.who[k], self.who[last] = self.who[last], None
        self.n = last

    def _settle(self) -> None:
        """Complete every issuer and drain mark the fluid has reached at this instant."""
        now = self.env.now
        self.q, self.drained = fluid.snap(self.q, self.drained, self.capacity, self.drain_rate, self.inflow, now)
        finished = [self.who[k] for k in self._finishing(now)]
        for producer, issued, drained in finished:
            k = next(k for k in range(self.n) if self.who[k][0] == producer)
            self.inflow = self.inflow - self.rate[k] if self.n > 1 else 0.0
            self._remove(k)
            self._marks.append((self.drained + self.q, drained))
            issued.succeed()
        while self._marks and fluid.due(self._time_to_drained(self._marks[0][0]), now):
            self._marks.pop(0)[1].succeed(now)
        self._shares()
        if self.trace_t is not None and (now > self.trace_t[-1] or self.q != self.trace_q[-1]):
            self.trace_t.append(now)
            self.trace_q.append(self.q)

    def _time_to_drained(self, mark: float) -> float:
        return fluid.time_to_drained(mark, self.drained, self.q, self.capacity, self.drain_rate, self.inflow)

    def _next_boundary(self) -> float:
        dt = fluid.time_to_boundary(self.q, self.capacity, self.drain_rate, self.inflow)
        for k in range(self.n):
            dt = min(dt, fluid.time_to_finish(self.left[k], self.rate[k], self.phi[k]))
        if self._marks:
            dt = min(dt, self._time_to_drained(self._marks[0][0]))
        return dt

    def drain(self):
        """The drain process: sleep until the next fluid boundary or a new issuer."""
        while True:
            self._advance()
            self._settle()
            self._wake = self.env.event()
            dt = self._next_boundary()
            if dt == float("inf"):
                yield self._wake
            else:
                yield self.env.timeout(dt) | self._wake


class Counters:
    """``l2_full``-style counters: tiles signal them, mainloops wait on a threshold."""

    def __init__(self, env: simpy.Environment, n: int):
        self.env = env
        self.value = [0] * n
        self._waiting: list[list[tuple[int, int, simpy.Event]]] = [[] for _ in range(n)]  # heaps
        self._seq = 0

    def wait(self, counter: int, value: int) -> simpy.Event:
        event = self.env.event()
        if self.value[counter] >= value:
            event.succeed()
        else:
            heapq.heappush(self._waiting[counter], (value, self._seq, event))
            self._seq += 1
        return event

    def signal(self, counter: int) -> None:
        """Increment; wake the waiters whose threshold is met, in the order they began waiting."""
        self.value[counter] += 1
        waiting = self._waiting[counter]
        woken = []
        while waiting and waiting[0][0] <= self.value[counter]:
            woken.append(heapq.heappop(waiting))
        for _, _, event in sorted(woken, key=lambda entry: entry[1]):
            event.succeed()


def run(workload: Workload, trace: bool = True) -> SimResult:
    """Simulate ``workload`` to completion."""
    w = workload
    env = simpy.Environment()
    stages = [XStage(env, x.drain_bytes_per_us, x.capacity_bytes, w.producer_weight, trace) for x in w.xstages]
    counters = Counters(env, w.n_counters)
    times = TileTimes.empty(w.n_tiles)
    coupled = w.coupling == "completion-coupled"

    def mma(p: int, slots: simpy.Container, finished: simpy.Store):
        for i in range(w.offsets[p], w.offsets[p + 1]):
            if w.release_us[i] > env.now:
                yield env.timeout(w.release_us[i] - env.now)
            ready = env.now
            if w.wait_counter[i] >= 0:
                yield counters.wait(int(w.wait_counter[i]), int(w.wait_value[i]))
            times.dep_wait_us[i] = env.now - ready
            deps_met = env.now
            yield slots.get(1)
            times.stall_us[i] = env.now - deps_met
            times.mainloop_start[i] = env.now
            yield env.timeout(w.mainloop_us[i])
            times.mainloop_end[i] = env.now
            yield finished.put(i)

    def issuer(p: int, slots: simpy.Container, finished: simpy.Store):
        stage = stages[w.producer_gpu[p]]
        last_drained = None  # drain event of this producer's latest remote tile
        for _ in range(w.offsets[p], w.offsets[p + 1]):
            i = yield finished.get()
            times.issue_start[i] = env.now
            if w.epilogue_us[i] > 0:
                yield env.timeout(w.epilogue_us[i])
            if w.bytes[i] > 0:
                issued, drained = stage.inject(p, w.bytes[i], w.t_iss0_us[i])
                last_drained = drained
                yield issued
            elif last_drained is not None and last_drained.callbacks is not None:
                drained = last_drained  # a local tile completes when the producer's stores have drained
            else:
                drained = env.event().succeed(env.now)
            times.issue_end[i] = env.now
            if w.signal_counter[i] >= 0 and not w.signal_on_drain[i]:
                counters.signal(int(w.signal_counter[i]))
            if drained.callbacks is None:  # already processed
                on_drained(i, drained.value)
            else:
                drained.callbacks.append(lambda e, i=i: on_drained(i, e.value))
            if coupled:
                yield drained
            yield slots.put(1)

    def on_drained(i: int, when: float) -> None:
        times.drain_end[i] = when
        if w.signal_counter[i] >= 0 and w.signal_on_drain[i]:
            counters.signal(int(w.signal_counter[i]))

    for p in range(w.n_producers):
        slots = simpy.Container(env, capacity=w.slots, init=w.slots)
        finished = simpy.Store(env)
        env.process(mma(p, slots, finished))
        env.process(issuer(p, slots, finished))
    env.run()
    _check_finished(w, times, counters)
    traces = [(np.asarray(s.trace_t), np.asarray(s.trace_q)) if trace else None for s in stages]
    return SimResult(workload=w, times=times, traces=traces, engine="simpy",
                     drained_bytes=[s.drained for s in stages])


def _check_finished(w: Workload, times: TileTimes, counters: Counters) -> None:
    unfinished = np.flatnonzero(np.isnan(times.drain_end))
    if unfinished.size:
        i = int(unfinished[0])
        p = int(w.producer[i])
        detail = ""
        if w.wait_counter[i] >= 0 and np.isnan(times.mainloop_start[i]):
            c = int(w.wait_counter[i])
            detail = f": it waits for counter {c} to reach {w.wait_value[i]}, which stopped at {counters.value[c]}"
        raise SimulationError(
            f"deadlock: {unfinished.size} tiles never finished; first is tile {i - w.offsets[p]} "
            f"of producer {p}{detail}")
