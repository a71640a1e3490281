"""The arrays of one fluid X-Stage (:mod:`xsim.des.fluid`): their layouts, and an empty stage.

A stage of n producers is six arrays (:class:`FluidStage`), each with one index space:

============  =====================  ==================================================
array         shape                  a row/column holds
============  =====================  ==================================================
``stage``     float[Stage]           the stage's clock, level, capacity share, drain rate
``count``     int[StageCount]        list lengths, producers with infinite demand
``fluid``     float[Fluid, n]        per producer: anchor, rate, weight, event keys, mark,
                                     values at ``now`` (scratch), the mode's motion
``status``    int[Status, n]         per producer: mode, demand, flags, its place in MOVING
``lists``     int[List, n]           per list: the producers in it, by position
``trees``     float[Tree, n]         per min-tree: its inner nodes, by node (1 .. n - 1)
============  =====================  ==================================================

Producers are the stage's local indices 0 .. n - 1. The fast engine keeps every stage's
producers in consecutive columns of one array per kind and hands the fluid functions column
views (:mod:`xsim.des.fast_state`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from xsim.des.layout import layout, rows

REL_TOL = 1e-12            # thresholds are relative to the magnitude they compare (us, or the clock V)
WEIGHT_QUANTUM = 2.0 ** -20

IDLE, BACKLOG, FULL, PASS, MIXED = range(5)   # values of Status.MODE
NO_DEMAND, FINITE, INFINITE = range(3)        # values of Status.DEMAND: what a producer wants of the drain

# the stage's clock t and V, water level L, per-producer capacity, drain rate R, the sum of the
# weights of the producers that want the drain, the lowest r / w of a FULL producer, the load
# gate's threshold (bytes; inf: no gate) and whether it stalls running mainloops (1.0: mode stall)
Stage = layout("Stage", "T V LEVEL CAP DRAIN WANT_W FULL_MIN GATE STALL")
StageCount = layout("StageCount", "ACTIVE TOUCHED INFINITE MOVING")  # lengths of those lists; INFINITE demands
# per producer: anchor (q, D, left at t0, V0), rate r, weight w, event keys (finish, boundary, the
# earliest in time and in V), drain mark, values at now, water-fill sort key, the mode's
# motion q += QA dt - QB dV, D += DA dt + DB dV, left -= LA dt + LB dV, and while its mainloop
# waits at the load gate the clock (GV) or time (GT) at which its q reaches the threshold, and its
# capacity share (CAP: Stage.CAP times its capacity factor, xsim.workload.Workload.producer_capacity)
Fluid = layout("Fluid", "Q0 D0 L0 T0 V0 RATE W KFIN KBND KT KV MARK QNOW DNOW LNOW KEY QA QB DA DB LA LB GV GT CAP")
# per producer: mode, demand, served by the water-fill, touched this instant, seen by this pass,
# position in List.MOVING (-1: not in it), its mainloop at a producer-scope load gate (GATE_*)
Status = layout("Status", "MODE DEMAND SAT TOUCHED SEEN MOVING_AT GATE")
# lists of producers: ACTIVE issuers (PASS, MIXED), TOUCHED this instant, DUE now, the water-fill's
# ORDER of finite demands, CAND (the pass's candidates), MOVING (q moves: BACKLOG, MIXED)
List = layout("List", "ACTIVE TOUCHED DUE ORDER CAND MOVING")
Tree = layout("Tree", "T V")   # min-trees over Fluid.KT and Fluid.KV (xsim.des.min_tree)
# values of Status.GATE: not at the gate; waiting for q to fall to the threshold; (mode stall) past
# it, keyed on q rising above it (xsim.des.fluid.stall_keys)
GATE_OFF, GATE_WAIT, GATE_PAST = range(3)


class FluidStage(NamedTuple):
    """The six arrays of one stage; pass them on as ``*stage`` (see the module's table)."""

    stage: np.ndarray
    count: np.ndarray
    fluid: np.ndarray
    status: np.ndarray
    lists: np.ndarray
    trees: np.ndarray


def quantize_weights(weight: np.ndarray) -> np.ndarray:
    """Arbitration weights on a grid of 2**-20 (at least one step), so their sums are exact."""
    steps = np.maximum(np.rint(np.asarray(weight, dtype=float) / WEIGHT_QUANTUM), 1.0)
    return steps * WEIGHT_QUANTUM


def new_stage(drain: float, cap: float, weight: np.ndarray, gate_bytes: float = math.inf,
              stall: bool = False, cap_factor: np.ndarray | None = None) -> FluidStage:
    """An empty stage whose producers have these (quantized) weights (and a load gate's threshold,
    whether it stalls running mainloops, and per producer a factor on the equal capacity share
    ``cap``: None, every producer owns ``cap``)."""
    n = len(weight)
    stage, count = np.zeros(len(Stage)), np.zeros(len(StageCount), np.int64)
    stage[Stage.CAP], stage[Stage.DRAIN], stage[Stage.FULL_MIN], stage[Stage.GATE] = cap, drain, math.inf, gate_bytes
    stage[Stage.STALL] = 1.0 if stall else 0.0
    fluid = rows(Fluid, n)
    fluid[Fluid.W] = quantize_weights(weight) if n else fluid[Fluid.W]
    fluid[Fluid.KFIN:Fluid.MARK + 1] = math.inf
    fluid[Fluid.GV:Fluid.GT + 1] = math.inf
    fluid[Fluid.CAP] = cap if cap_factor is None else cap * np.asarray(cap_factor, dtype=float)
    status = rows(Status, n, np.int64)
    status[Status.MOVING_AT] = -1
    return FluidStage(stage, count, fluid, status, rows(List, n, np.int64), rows(Tree, n, fill=math.inf))
