"""The stall gate's per-producer keys (scope "producer", mode "stall"): when q crosses the threshold.

A producer whose mainloop is at a stall gate (:mod:`xsim.des.stall`) has one gate key, in the
fluid's own terms like every other key (:func:`xsim.des.fluid.keys` folds it into ``Fluid.KT`` /
``Fluid.KV``): while it waits (``Status.GATE == GATE_WAIT``) the clock or time at which its q
falls to the threshold G, once past the gate (``GATE_PAST``: released or running) the time at
which its q rises above G. Only a MIXED producer's q can rise (it issues faster than it drains);
a FULL one sits at its capacity share.

The keys are hysteretic, so that a flip never calls for the opposite flip at the same instant:
a waiting producer whose q sits at G (within :func:`band`) while rising has no key (it stays
closed), and a producer past the gate whose q sits at G while not rising has none (it stays
open). A key that is due flips the producer's state at the drain's next turn.
"""
from __future__ import annotations

import math

from xsim.des.fluid_state import BACKLOG, FULL, MIXED, REL_TOL, Fluid, Stage
from xsim.des.jit import jit


@jit
def band(stage):
    """An occupancy this close to the threshold is at it (rounding cannot tell above from below)."""
    return REL_TOL * max(stage[Stage.GATE], 1.0)


@jit
def closed_keys(stage, fluid, k, mode, now, q):
    """Waiting: (clock key, time key) at which q falls to the threshold; ``now`` if q is below it
    and not rising, or at it and not rising; (inf, inf) while q is above it and not falling."""
    f, gate, tol = fluid, stage[Stage.GATE], band(stage)
    gv, gt = math.inf, math.inf
    if mode == BACKLOG:
        gv = f[Fluid.V0, k] + (f[Fluid.Q0, k] - gate) / f[Fluid.W, k]
    elif mode == MIXED:
        dq = f[Fluid.RATE, k] - stage[Stage.LEVEL] * f[Fluid.W, k]
        if dq < 0.0:
            gt = now + (q - gate) / -dq
        elif (dq == 0.0 and q <= gate + tol) or q < gate - tol:
            gt = now
    elif mode != FULL or stage[Stage.CAP] <= gate + tol:  # IDLE, PASS: q = 0; FULL: q = cap
        gt = now
    return gv, gt


@jit
def open_keys(stage, fluid, k, mode, now, q):
    """Past the gate: (inf, time key) at which q rises above the threshold (a MIXED producer that
    fills; ``now`` if FULL above it); inf if q does not rise."""
    f, gate = fluid, stage[Stage.GATE]
    gt = math.inf
    if mode == MIXED:
        dq = f[Fluid.RATE, k] - stage[Stage.LEVEL] * f[Fluid.W, k]
        if dq > 0.0:
            gt = now + (gate - q) / dq
    elif mode == FULL and stage[Stage.CAP] > gate + band(stage):
        gt = now
    return math.inf, gt
