"""The stall gate (:mod:`xsim.load_gate`, mode "stall"): a running mainloop progresses only while
the occupancy its producer sees is at or below the threshold. Arithmetic for both engines.

A gated mainloop is, per producer, in one of four states (``IDLE`` .. ``RUNNING``): not at the
gate; ``WAITING`` for the occupancy to fall to the threshold (before it starts, or paused, its
remaining work frozen); ``RELEASED`` (the gate opened; its role resumes at this instant); or
``RUNNING``, with ``left`` us of work from ``run_t`` on. The gate just after ``now`` is closed
iff the occupancy is above the threshold G, or at it (:func:`xsim.des.fluid.near_gate`: within
rounding, or so close that its crossing is due now, or at a predicted crossing) and rising (:func:`closed`): at a crossing the slope decides, so a
flip never calls for the opposite one at the same instant.

- **link scope**: the stage's total q is linear between two drain turns, so each turn (after
  the water-fill, while any mainloop is at the gate) takes its value and slope
  (:func:`xsim.des.gate.link_motion`), decides (:func:`link_state`), pauses every running
  mainloop (closed) or releases every waiting one (open), and keys the next crossing: down while
  closed, up while open. A mainloop that arrives at the gate decides from the same motion, so a
  drain that sleeps past an upward crossing is woken (:func:`crossing`).
- **producer scope**: the producer's own q; the crossing is a key of the producer in the fluid's
  terms (:func:`xsim.des.fluid.stall_keys`), found by the min-trees; a due key flips that producer.

A running mainloop whose work ends by ``now`` (within :func:`xsim.des.fluid.tol_t`) is not paused:
it ends at this instant (:func:`ending`). Paused, its work left is ``left - (now - run_t)``
(:func:`left_after`), and it resumes with exactly that.
"""
from __future__ import annotations

import math

from xsim.des.fluid import evaluate, near_gate, tol_t
from xsim.des.fluid_state import BACKLOG, MIXED, Fluid, Stage, Status
from xsim.des.gate import clock_at, link_motion
from xsim.des.jit import jit

IDLE, WAITING, RELEASED, RUNNING = range(4)   # a producer's mainloop at a stall gate


@jit
def closed(value, slope, gate, near):
    """The gate just after now: closed iff the occupancy is above the threshold, or (``near``: at
    it) rising."""
    if near:
        return slope > 0.0
    return value > gate


@jit
def crossing(now, value, slope, gate, shut):
    """When the occupancy next crosses the threshold: down while closed (``shut``), up while open;
    inf if it moves away from it."""
    if shut:
        return now + (value - gate) / -slope if slope < 0.0 else math.inf
    return now + (gate - value) / slope if slope > 0.0 else math.inf


@jit
def link_state(stage, fluid, status, n, now, key):
    """Link scope at ``now`` (after the water-fill, or between turns: the motion is the last
    water-fill's): (closed, the next crossing). ``key``: the crossing the last turn predicted (a
    due one is at the threshold; inf for a mainloop that arrives)."""
    total, slope = link_motion(stage, fluid, status, n, now)
    gate = stage[Stage.GATE]
    near = key <= now + tol_t(now) or near_gate(stage, total, slope, now)
    shut = closed(total, slope, gate, near)
    return shut, crossing(now, total, slope, gate, shut)


@jit
def producer_state(stage, fluid, status, k, now):
    """Producer scope, for a mainloop that arrives at the gate: (closed, the next crossing) of
    producer k's own q (BACKLOG: it falls at L w; MIXED: it moves at r - L w; else it holds)."""
    q = evaluate(fluid, k, now, clock_at(stage, now), fluid[Fluid.CAP, k])[0]
    mode, level, w = status[Status.MODE, k], stage[Stage.LEVEL], fluid[Fluid.W, k]
    slope = -level * w if mode == BACKLOG else (fluid[Fluid.RATE, k] - level * w if mode == MIXED else 0.0)
    gate = stage[Stage.GATE]
    shut = closed(q, slope, gate, near_gate(stage, q, slope, now))
    return shut, crossing(now, q, slope, gate, shut)


@jit
def ending(run_t, left, now):
    """A mainloop running since ``run_t`` with ``left`` us of work ends by ``now`` (not paused)."""
    return run_t + left <= now + tol_t(now)


@jit
def left_after(run_t, left, now):
    """Its work left when paused at ``now``."""
    return left - (now - run_t)
