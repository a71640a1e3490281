"""The water-fill: the drain rate R shared by the producers that want it, and their new modes.

An issuer with nothing outstanding takes at most its rate r (its stores pass straight
through) while that fits under the water level L; every other producer that wants the drain
gets ``L w``. :func:`flows` re-runs the water-fill at an instant and brings every producer's
mode and event keys up to date (:mod:`xsim.des.fluid` for the motion, its arrays in
:mod:`xsim.des.fluid_state`). Sums of weights are exact (weights on a 2**-20 grid), so the
level does not depend on the order in which producers are examined.
"""

from __future__ import annotations

import math

from xsim.des.fluid import anchor, evaluate, keys, set_mode
from xsim.des.fluid_state import (BACKLOG, FINITE, FULL, IDLE, INFINITE, MIXED, NO_DEMAND, PASS, Fluid, List,
                                  Stage, StageCount, Status)
from xsim.des.jit import jit


@jit
def _consider(stage, count, fluid, status, lists, k, now, n_finite):
    """flows' first look at candidate k: its values now and what it wants of the drain; finite
    demands are insertion-sorted into ``lists[List.ORDER, :n_finite]`` by (rate / weight, index).
    Returns the new n_finite."""
    f, order = fluid, lists[List.ORDER]
    q, d, left = evaluate(f, k, now, stage[Stage.V], f[Fluid.CAP, k])
    f[Fluid.QNOW, k], f[Fluid.DNOW, k], f[Fluid.LNOW, k] = q, d, left
    demand = INFINITE if q > 0.0 else (FINITE if left > 0.0 else NO_DEMAND)
    old = status[Status.DEMAND, k]
    if (old == NO_DEMAND) != (demand == NO_DEMAND):
        stage[Stage.WANT_W] += f[Fluid.W, k] if demand != NO_DEMAND else -f[Fluid.W, k]
    count[StageCount.INFINITE] += (demand == INFINITE) - (old == INFINITE)
    status[Status.DEMAND, k], status[Status.SAT, k] = demand, 0
    if demand == FINITE:
        f[Fluid.KEY, k] = f[Fluid.RATE, k] / f[Fluid.W, k]
        m = n_finite
        while m > 0 and (f[Fluid.KEY, order[m - 1]] > f[Fluid.KEY, k]
                         or (f[Fluid.KEY, order[m - 1]] == f[Fluid.KEY, k] and order[m - 1] > k)):
            order[m] = order[m - 1]
            m -= 1
        order[m] = k
        n_finite += 1
    return n_finite


@jit
def _level(stage, count, fluid, status, lists, n_finite):
    """The level: finite demands in order pass straight through while they fit under it."""
    budget, total, m = stage[Stage.DRAIN], stage[Stage.WANT_W], 0
    order = lists[List.ORDER]
    while m < n_finite and fluid[Fluid.KEY, order[m]] <= budget / total:
        k = order[m]
        status[Status.SAT, k] = 1
        budget -= fluid[Fluid.RATE, k]
        total -= fluid[Fluid.W, k]
        m += 1
    if m < n_finite or count[StageCount.INFINITE] > 0:
        return budget / total
    return 0.0


@jit
def _update(stage, count, fluid, status, lists, trees, k, now):
    """flows' second look at candidate k: its mode at the new level; re-anchor it if the mode
    changes, and recompute its keys if it changed, was touched, or is an issuer in PASS/MIXED."""
    f = fluid
    q, left, level, cap = f[Fluid.QNOW, k], f[Fluid.LNOW, k], stage[Stage.LEVEL], f[Fluid.CAP, k]
    if left <= 0.0:
        mode = BACKLOG if q > 0.0 else IDLE
    elif q <= 0.0:
        mode = PASS if status[Status.SAT, k] == 1 else MIXED
    elif q >= cap and level * f[Fluid.W, k] <= f[Fluid.RATE, k]:
        mode = FULL
    else:
        mode = MIXED
    changed = mode != status[Status.MODE, k]
    if changed:
        anchor(f, k, q, f[Fluid.DNOW, k], left, now, stage[Stage.V])
        set_mode(count, f, status, lists, k, mode)
    if mode == FULL:
        stage[Stage.FULL_MIN] = min(stage[Stage.FULL_MIN], f[Fluid.RATE, k] / f[Fluid.W, k])
    if changed or status[Status.TOUCHED, k] == 1 or mode == PASS or mode == MIXED:
        keys(stage, f, status, trees, k, now)
    if mode == PASS or mode == MIXED:
        lists[List.ACTIVE, count[StageCount.ACTIVE]] = k
        count[StageCount.ACTIVE] += 1


@jit
def flows(stage, count, fluid, status, lists, trees, n, now, scan_all):
    """Re-run the water-fill at ``now`` (the stage advanced to it) and bring every producer's
    mode and keys up to date. ``scan_all`` examines every producer (reference); otherwise only
    the candidates: touched producers, issuers in PASS or MIXED, and full producers the new
    level overtakes (``L w > r``: they start to empty)."""
    cand, seen = lists[List.CAND], status[Status.SEEN]
    c = 0  # candidates: cand[:c]
    if scan_all:
        for k in range(n):
            cand[c] = k
            c += 1
    else:
        for j in range(count[StageCount.TOUCHED]):
            k = lists[List.TOUCHED, j]
            seen[k] = 1
            cand[c] = k
            c += 1
        for j in range(count[StageCount.ACTIVE]):
            k = lists[List.ACTIVE, j]
            if seen[k] == 0:
                seen[k] = 1
                cand[c] = k
                c += 1
    n_finite = 0
    for j in range(c):
        n_finite = _consider(stage, count, fluid, status, lists, cand[j], now, n_finite)
    level = _level(stage, count, fluid, status, lists, n_finite)
    stage[Stage.LEVEL] = level
    if not scan_all and level * (1.0 + 1e-9) > stage[Stage.FULL_MIN]:  # some full producer may now empty
        lowest = math.inf
        for k in range(n):
            if status[Status.MODE, k] == FULL and seen[k] == 0:
                if level * fluid[Fluid.W, k] > fluid[Fluid.RATE, k]:
                    _consider(stage, count, fluid, status, lists, k, now, 0)  # q > 0: an infinite demand, as before
                    seen[k] = 1
                    cand[c] = k
                    c += 1
                else:
                    lowest = min(lowest, fluid[Fluid.RATE, k] / fluid[Fluid.W, k])
        stage[Stage.FULL_MIN] = lowest
    count[StageCount.ACTIVE] = 0
    for j in range(c):
        _update(stage, count, fluid, status, lists, trees, cand[j], now)
    for j in range(c):
        k = cand[j]
        seen[k], status[Status.TOUCHED, k] = 0, 0
    count[StageCount.TOUCHED] = 0
