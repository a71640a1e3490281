"""The stall gate (:mod:`xsim.des.stall`) on the reference engine's :class:`~xsim.des.simpy_engine.XStage`.

Per producer of the stage: its mainloop's state at the gate (``stall.IDLE`` .. ``RUNNING``), the
event it waits for, its process (a running mainloop is paused by interrupting it: SimPy's
``Process.interrupt``, an urgent event at the instant, whose cause is the event to wait for),
and its work ``left`` from ``run_t`` on. Link scope: the waiting producers in the order they
began to wait, how many mainloops are at the gate, the next crossing. The fast engine's twin is
:mod:`xsim.des.fast_stall`; both call the same arithmetic.
"""

from __future__ import annotations

import math

from xsim.des import gate, stall
from xsim.des.fluid_state import GATE_OFF, GATE_PAST, GATE_WAIT, Fluid, Status
from xsim.des.stall import IDLE, RELEASED, RUNNING, WAITING


class StallGate:
    """Mode stall of the load gate on one X-Stage ``x`` (link scope if ``link``, else producer)."""

    def __init__(self, x, link: bool):
        self.x, self.link = x, link
        n = x.n
        self.state = [IDLE] * n
        self.event: list = [None] * n     # WAITING: the event its mainloop waits for
        self.proc: list = [None] * n
        self.run_t = [0.0] * n
        self.left = [0.0] * n             # us of work left at run_t
        self.waiting: list[int] = []      # link scope: WAITING producers, in the order they began to wait
        self.count = 0                    # link scope: mainloops at the gate (not IDLE)
        self.key = math.inf               # link scope: the next crossing

    def arrive(self, i: int, mainloop_us: float, proc):
        """Producer i's mainloop of ``mainloop_us`` reaches the gate: None if it runs now, else the
        event to wait for (the drain woken to take it in)."""
        s, now = self.x.s, self.x.env.now
        self.proc[i], self.left[i] = proc, mainloop_us
        if self.link:
            shut, key = stall.link_state(s.stage, s.fluid, s.status, self.x.n, now, math.inf)
            if self.count == 0:
                self.key = key
            self.count += 1
        else:
            shut, key = stall.producer_state(s.stage, s.fluid, s.status, i, now)
        if shut:
            if not self.link:
                gate.wait_producer(s.count, s.status, s.lists, i)
            event = self._wait(i)
            self.x.wake()
            return event
        self.state[i], self.run_t[i] = RUNNING, now
        if not self.link:
            s.status[Status.GATE, i] = GATE_PAST
        if key < self.x.timer_at:   # it crosses up before the drain's next turn
            self.x.wake()
        return None

    def resume(self, i: int):
        """Producer i's wait ended: None if released (it runs from now), else the event to wait for
        (it was paused again before it resumed)."""
        if self.state[i] == WAITING:
            return self.event[i]
        self.state[i], self.run_t[i] = RUNNING, self.x.env.now
        return None

    def finish(self, i: int) -> None:
        """Producer i's mainloop ended."""
        self.state[i], self.proc[i] = IDLE, None
        if self.link:
            self.count -= 1
            if self.count == 0:
                self.key = math.inf
        else:
            s = self.x.s
            s.status[Status.GATE, i] = GATE_OFF
            s.fluid[Fluid.GV, i], s.fluid[Fluid.GT, i] = math.inf, math.inf

    def _wait(self, i: int):
        self.state[i] = WAITING
        event = self.event[i] = self.x.env.event()
        if self.link:
            self.waiting.append(i)
        return event

    def _release(self, i: int) -> None:
        self.state[i] = RELEASED
        self.event[i], event = None, self.event[i]
        event.succeed()

    def _pause(self, i: int, now: float) -> bool:
        """Pause producer i if it is past the gate (a running mainloop keeps its work left; one that
        ends by now is left to end). Returns whether it waits now."""
        state = self.state[i]
        if state == RUNNING:
            if stall.ending(self.run_t[i], self.left[i], now):
                return False
            self.left[i] = stall.left_after(self.run_t[i], self.left[i], now)
            self.proc[i].interrupt(self._wait(i))
            return True
        if state == RELEASED:
            self._wait(i)
            return True
        return False

    def producer_turn(self, now: float) -> None:
        """Producer scope, before the water-fill: flip every producer whose gate key is due, in order."""
        s = self.x.s
        for i in range(self.x.n):
            if gate.producer_due(s.stage, s.fluid, s.status, i, now):
                if self.state[i] == WAITING:
                    s.status[Status.GATE, i] = GATE_PAST
                    self._release(i)
                elif self._pause(i, now):
                    s.status[Status.GATE, i] = GATE_WAIT

    def link_turn(self, now: float) -> None:
        """Link scope, after the water-fill: decide, pause or release, key the next crossing."""
        if self.count == 0:
            return
        s = self.x.s
        shut, self.key = stall.link_state(s.stage, s.fluid, s.status, self.x.n, now, self.key)
        if shut:
            for i in range(self.x.n):
                self._pause(i, now)
        elif self.waiting:
            self.waiting, waiting = [], self.waiting
            for i in waiting:
                self._release(i)
