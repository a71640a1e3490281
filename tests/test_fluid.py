"""The fluid X-Stage's arithmetic on one tiny stage, step by step, with exact numbers.

One stage: drain R = 10 B/us, capacity share 100 B, two producers of weight 1. Producer 0
issues 50 B at r = 20 B/us from t = 0: the drain serves 10 B/us of it, so its q grows at
10 B/us (MIXED) until its issue ends at 2.5 us with q = 25 B; then it drains (BACKLOG) at
L w = 10 B/us and is empty at 5 us, when its mark (D + q at its issue end, 50 B) passes.
Both ways of finding producers (scan every one, or the lists and min-trees) agree.
"""

import math

import numpy as np
import pytest

from xsim.des import fluid
from xsim.des.fluid_state import BACKLOG, IDLE, MIXED, Fluid, List, Stage, Status, new_stage
from xsim.des.water_fill import flows


def turn(s, now, scan_all):
    """What a drain turn does: advance, settle due producers, water-fill; returns the due list
    and the time to the next event."""
    fluid.advance(s.stage, now)
    due = fluid.snap(*s, 2, now, scan_all)
    flows(*s, 2, now, scan_all)
    return list(s.lists[List.DUE, :due]), fluid.next_event(s.stage, s.fluid, s.trees, 2, now, scan_all)


@pytest.mark.parametrize("scan_all", [True, False])
def test_one_issue_fills_then_drains(scan_all):
    s = new_stage(10.0, 100.0, np.ones(2))
    fluid.start(s.stage, s.count, s.fluid, s.status, s.lists, 0, 50.0, 20.0, 0.0)
    assert turn(s, 0.0, scan_all) == ([], 2.5)                    # the issue ends first (the boundary at 10 us)
    assert s.status[Status.MODE, 0] == MIXED and s.stage[Stage.LEVEL] == 10.0
    assert s.fluid[Fluid.KFIN, 0] == 2.5 and s.fluid[Fluid.KBND, 0] == 10.0

    assert turn(s, 2.5, scan_all) == ([0], 2.5)                   # issue end: q = 25 B drains in 2.5 us
    assert s.stage[Stage.V] == 25.0 and s.status[Status.MODE, 0] == BACKLOG
    assert (s.fluid[Fluid.Q0, 0], s.fluid[Fluid.D0, 0], s.fluid[Fluid.L0, 0]) == (25.0, 25.0, 0.0)
    assert s.fluid[Fluid.KV, 0] == 50.0 and s.fluid[Fluid.KT, 0] == math.inf  # empty at V = 50
    mark = s.fluid[Fluid.D0, 0] + s.fluid[Fluid.Q0, 0]
    assert not fluid.mark_due(s.stage, s.fluid, s.status, 0, mark, 4.0)

    assert turn(s, 5.0, scan_all) == ([0], math.inf)              # empty: nothing left to happen
    assert fluid.mark_due(s.stage, s.fluid, s.status, 0, mark, 5.0)
    assert s.status[Status.MODE, 0] == IDLE and s.fluid[Fluid.D0, 0] == 50.0
    assert s.status[Status.MODE, 1] == IDLE and s.fluid[Fluid.D0, 1] == 0.0


def test_evaluate_follows_the_anchor_and_the_motion():
    s = new_stage(10.0, 100.0, np.ones(1))
    x = s.fluid
    fluid.anchor(x, 0, 10.0, 5.0, 40.0, 1.0, 3.0)
    x[Fluid.RATE, 0] = 20.0
    fluid.set_mode(s.count, x, s.status, s.lists, 0, MIXED)   # q += r dt - w dV, D += w dV, left -= r dt
    assert fluid.evaluate(x, 0, 2.0, 7.0, 100.0) == (10.0 + 20.0 - 4.0, 5.0 + 4.0, 40.0 - 20.0)
    assert fluid.evaluate(x, 0, 2.0, 7.0, 20.0)[0] == 20.0    # q never exceeds the capacity share


@pytest.mark.parametrize("scan_all", [True, False])
def test_fill_q_gives_every_producer_its_q_now(scan_all):
    s = new_stage(10.0, 100.0, np.ones(2))
    fluid.start(s.stage, s.count, s.fluid, s.status, s.lists, 1, 50.0, 20.0, 0.0)
    turn(s, 0.0, scan_all)
    fluid.advance(s.stage, 1.0)
    fluid.fill_q(s.stage, s.count, s.fluid, s.lists, 2, 1.0, scan_all)
    assert list(s.fluid[Fluid.QNOW]) == [0.0, 10.0]


def test_advance_moves_the_virtual_clock_at_the_level():
    s = new_stage(10.0, 100.0, np.ones(1))
    s.stage[Stage.LEVEL] = 4.0
    fluid.advance(s.stage, 2.5)
    assert (s.stage[Stage.T], s.stage[Stage.V]) == (2.5, 10.0)
