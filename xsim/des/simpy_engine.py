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

from xsim.des import fluid, gate
from xsim.des.fluid_state import Fluid, Stage
from xsim.des.result import SimResult, TileTimes
from xsim.des.simpy_stall import StallGate
from xsim.des.water_fill import flows
from xsim.workload import Workload


class SimulationError(RuntimeError):
    """The workload cannot finish (a dependency that is never met)."""


class XStage:
    """One source GPU's fluid X-Stage (see :mod:`xsim.des.fluid`): its arrays are ``self.s``
    (:class:`xsim.des.fluid_state.FluidStage`), passed to the fluid functions as ``*self.s``."""

    def __init__(self, env: simpy.Environment, drain: float, capacity: float, producers: np.ndarray,
                 weight: np.ndarray, trace: bool, gate_bytes: float = np.inf, gate_scope: str = "producer",
                 gate_stalls: bool = False, cap_factor: np.ndarray | None = None):
        self.env = env
        self.local = {int(p): i for i, p in enumerate(producers)}  # producer -> index here
        n = self.n = len(producers)
        weight = np.asarray(weight, dtype=float)[producers] if n else np.zeros(0)
        cap_factor = None if cap_factor is None else np.asarray(cap_factor, dtype=float)[producers]
        self.s = fluid.new_stage(drain, capacity / max(n, 1), weight, gate_bytes, gate_stalls, cap_factor)
        self.stall = StallGate(self, gate_scope == "link") if gate_stalls else None  # mode stall
        start_scope = None if gate_stalls else gate_scope   # the start-mode gate's paths below
        self._marks: list[list] = [[] for _ in range(n)]  # FIFO of (mark, event) per producer
        self._issued: list = [None] * n
        self._link = start_scope == "link"
        self._fifo = start_scope in ("fifo", "fifo-link")
        self._then_link = start_scope == "fifo-link"   # a fifo fence at 0, then the link gate
        self._own_gate = start_scope == "producer" and gate_bytes < np.inf  # a gate key per producer
        self._gated: list = [None] * n   # producer scope: the event a waiting mainloop yields
        self._link_waiting: list = []    # link scope: the waiting mainloops' events, in order;
        #                                  fifo scope: (accepted bytes when it began, event), in order
        self._link_key = np.inf          # link, fifo scope: when the total q (the head's excess) reaches it
        self._then_waiting: list = []    # fifo-link scope: past the fence, waiting at the link gate, in order
        self._then_key = np.inf          # fifo-link scope: when the total q reaches the link threshold
        self._acc = (0.0, 0.0, 0.0)      # fifo scope: bytes accepted since the anchor, at, rate since
        self.trace_t: list[float] | None = [0.0] if trace else None
        self.trace_q: list[float] = [0.0]
        self._wake = env.event()
        self._timer, self.timer_at = None, np.inf   # the drain's pending timeout and its time (inf: none)
        env.process(self.drain())

    @property
    def total_drained(self) -> float:
        return float(self.s.fluid[Fluid.D0].sum())

    def inject(self, producer: int, nbytes: float, t_iss0_us: float) -> tuple[simpy.Event, simpy.Event]:
        """Start issuing ``nbytes``; returns (issue-ended, bytes-drained) events."""
        now = self.env.now
        fluid.advance(self.s.stage, now)
        i = self.local[producer]
        issued, drained = self.env.event(), self.env.event()
        s = self.s
        fluid.start(s.stage, s.count, s.fluid, s.status, s.lists, i, nbytes, nbytes / t_iss0_us, now)
        self._issued[i] = (issued, drained)  # the drain's turn at this instant runs the water-fill
        if not self._wake.triggered:
            self._wake.succeed()
        return issued, drained

    def gate(self, producer: int) -> simpy.Event | None:
        """The load gate before ``producer``'s mainloop: None if the occupancy is at or below the
        threshold now, else the event that fires when it gets there (the drain's turn at this
        instant gives it its key)."""
        s, now, i = self.s, self.env.now, self.local[producer]
        if self._link or self._fifo:
            opens = gate.fence_open if self._then_link else gate.link_open
            if opens(s.stage, s.fluid, s.status, self.n, now):
                return None
            if not self._link_waiting:
                self._link_key = np.inf
                if self._fifo:
                    self._acc = (0.0, now, 0.0)  # the anchor: no one waits before this one
            event = self.env.event()
            self._link_waiting.append((gate.fifo_acc(*self._acc, now), event) if self._fifo else event)
        else:
            if gate.producer_open(s.stage, s.fluid, i, now):
                return None
            gate.wait_producer(s.count, s.status, s.lists, i)
            event = self._gated[i] = self.env.event()
        if not self._wake.triggered:
            self._wake.succeed()
        return event

    def wake(self) -> None:
        """Wake the drain (once per instant): its turn at this instant takes in what changed."""
        if not self._wake.triggered:
            self._wake.succeed()

    def _timer_fired(self, event) -> None:
        if event is self._timer:
            self._timer, self.timer_at = None, np.inf

    def _flows(self) -> None:
        flows(*self.s, self.n, self.env.now, True)  # every producer: the reference

    def _settle(self) -> None:
        """Complete every issuer and drain mark the fluid has reached at this instant."""
        now = self.env.now
        s = self.s
        fluid.snap(*s, self.n, now, True)  # every producer: the reference
        x = s.fluid
        left, rate, drained_bytes, q, mark = x[Fluid.L0], x[Fluid.RATE], x[Fluid.D0], x[Fluid.Q0], x[Fluid.MARK]
        for i in range(self.n):  # issue ends, in producer order
            if self._issued[i] is not None and left[i] <= 0.0:
                issued, drained = self._issued[i]
                self._issued[i] = None
                rate[i] = 0.0
                self._marks[i].append((drained_bytes[i] + q[i], drained))
                issued.succeed()
        for i in range(self.n):  # drain marks, per producer in order
            marks = self._marks[i]
            while marks and fluid.mark_due(s.stage, x, s.status, i, marks[0][0], now):
                marks.pop(0)[1].succeed(now)
            mark[i] = marks[0][0] if marks else np.inf
        for i in range(self.n if self._own_gate else 0):  # producer-scope gates whose key is due, in order
            if gate.producer_due(s.stage, x, s.status, i, now):
                self._gated[i], event = None, self._gated[i]
                event.succeed()
        if self.stall is not None and not self.stall.link:
            self.stall.producer_turn(now)
        self._flows()
        if self.stall is not None and self.stall.link:
            self.stall.link_turn(now)
        elif self._fifo:
            if self._link_waiting:
                self._fifo_turn(now)
            if self._then_waiting:   # fifo-link: past the fence, at the link gate
                self._then_waiting, self._then_key = self._link_turn(self._then_waiting, self._then_key, now)
        elif self._link_waiting:
            self._link_waiting, self._link_key = self._link_turn(self._link_waiting, self._link_key, now)
        if self.trace_t is not None:
            fluid.fill_q(s.stage, s.count, x, s.lists, self.n, now, True)  # every producer: the reference
            total = float(x[Fluid.QNOW].sum())
            if now > self.trace_t[-1] or total != self.trace_q[-1]:
                self.trace_t.append(now)
                self.trace_q.append(total)

    def _fifo_turn(self, now: float) -> None:
        """After the water-fill, with mainloops waiting at a fifo-scope gate: advance the accepted
        bytes, release the waiters at their target (in the order they began to wait), key the head."""
        s, waiting = self.s, self._link_waiting
        acc = gate.fifo_acc(*self._acc, now)
        total, slope, accept = gate.fifo_motion(s.stage, s.fluid, s.status, self.n, now)
        self._acc = (acc, now, accept)
        threshold = gate.fifo_threshold(s.stage, self._then_link)
        excess = gate.fifo_excess(total, acc, waiting[0][0], threshold)
        bound = gate.fifo_bound(excess, self._link_key, now)
        while excess <= bound:
            self._past_fence(waiting.pop(0)[1], total)
            if not waiting:
                break
            excess = gate.fifo_excess(total, acc, waiting[0][0], threshold)
        self._link_key = gate.fifo_key(now, excess, slope, accept) if waiting else np.inf

    def _past_fence(self, event, total: float) -> None:
        """A fifo waiter at its target: it starts (scope fifo, or the link gate open at the total q
        ``total``), or waits on at the link gate (fifo-link)."""
        if not self._then_link or total <= self.s.stage[Stage.GATE]:
            event.succeed()
            return
        if not self._then_waiting:
            self._then_key = np.inf
        self._then_waiting.append(event)

    def _link_turn(self, waiting: list, key: float, now: float) -> tuple[list, float]:
        """A link-scope list of waiters (the stage's, or fifo-link's past the fence): release them
        together once the total q is at or below the threshold or their crossing ``key`` is due;
        returns the list left and the next key."""
        s = self.s
        released, key = gate.link_turn(s.stage, s.fluid, s.status, self.n, now, key)
        if not released:
            return waiting, key
        for event in waiting:
            event.succeed()
        return [], key

    def drain(self):
        """The drain process: sleep until the next fluid event or a new issuer."""
        while True:
            fluid.advance(self.s.stage, self.env.now)
            self._settle()
            self._wake = self.env.event()
            dt = fluid.next_event(self.s.stage, self.s.fluid, self.s.trees, self.n, self.env.now, True)
            if self._link_waiting or self._then_waiting:
                key = min(self._link_key if self._link_waiting else np.inf,
                          self._then_key if self._then_waiting else np.inf)
                dt = min(dt, max(key - self.env.now, 0.0))
            elif self.stall is not None and self.stall.link and self.stall.count:
                dt = min(dt, max(self.stall.key - self.env.now, 0.0))
            if dt == float("inf"):
                self._timer, self.timer_at = None, np.inf
                yield self._wake
            else:
                self._timer, self.timer_at = self.env.timeout(dt), self.env.now + dt
                self._timer.callbacks.append(self._timer_fired)
                yield self._timer | self._wake


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
    gated = w.gate
    stalls = gated is not None and gated.stalls
    stages = [XStage(env, x.drain_bytes_per_us, x.capacity_bytes, np.flatnonzero(w.producer_gpu == g),
                     w.producer_weight, trace,
                     *((gated.threshold_bytes, gated.scope, stalls) if gated else (np.inf, "producer", False)),
                     cap_factor=w.producer_capacity)
              for g, x in enumerate(w.xstages)]
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
            slot_at = env.now
            if stalls and w.mainloop_us[i] > 0:
                yield from stalled(stages[w.producer_gpu[p]], p, i, slot_at, deps_met)
            else:
                if gated is not None and w.mainloop_us[i] > 0:
                    wait = stages[w.producer_gpu[p]].gate(p)
                    if wait is not None:
                        yield wait
                times.gate_wait_us[i] = env.now - slot_at
                times.stall_us[i] = env.now - deps_met
                times.mainloop_start[i] = env.now
                yield env.timeout(w.mainloop_us[i])
            times.mainloop_end[i] = env.now
            yield finished.put(i)

    def stalled(stage: XStage, p: int, i: int, slot_at: float, deps_met: float):
        """Tile i's mainloop at a stall gate: it runs while the gate is open, paused (interrupted by
        the stage) whenever it closes; every pause counts in its gate wait and stall."""
        gate_of, k = stage.stall, stage.local[p]
        wait = gate_of.arrive(k, w.mainloop_us[i], env.active_process)
        while wait is not None:
            yield wait
            wait = gate_of.resume(k)
        times.gate_wait_us[i] = env.now - slot_at
        times.stall_us[i] = env.now - deps_met
        times.mainloop_start[i] = env.now
        while True:
            try:
                yield env.timeout(gate_of.left[k])
                break
            except simpy.Interrupt as paused:
                at, wait = env.now, paused.cause
                while wait is not None:
                    yield wait
                    wait = gate_of.resume(k)
                times.gate_wait_us[i] += env.now - at
                times.stall_us[i] += env.now - at
        gate_of.finish(k)

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
                     drained_bytes=[s.total_drained for s in stages])


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
