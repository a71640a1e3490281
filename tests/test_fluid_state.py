"""The fluid stage's arrays: declared layouts, an empty stage, weights on an exact grid."""

import math

import numpy as np

from xsim.des.fluid_state import (WEIGHT_QUANTUM, Fluid, FluidStage, List, Stage, StageCount, Status, Tree,
                                  new_stage, quantize_weights)


def test_an_empty_stage_has_one_array_per_layout():
    s = new_stage(7.0, 3.0, np.array([1.0, 0.5, 2.0]))
    assert isinstance(s, FluidStage)
    assert s.stage.shape == (len(Stage),) and s.count.shape == (len(StageCount),)
    for array, layout in ((s.fluid, Fluid), (s.status, Status), (s.lists, List), (s.trees, Tree)):
        assert array.shape == (len(layout), 3)
    assert (s.stage[Stage.DRAIN], s.stage[Stage.CAP], s.stage[Stage.FULL_MIN]) == (7.0, 3.0, math.inf)
    assert (s.fluid[Fluid.KFIN:Fluid.MARK + 1] == math.inf).all() and (s.trees == math.inf).all()
    assert (s.status[Status.MOVING_AT] == -1).all() and list(s.fluid[Fluid.W]) == [1.0, 0.5, 2.0]


def test_weights_on_the_exact_grid():
    w = quantize_weights(np.array([1.0, 0.7312345678, 1e-9, 2.5]))
    assert w[0] == 1.0 and w[3] == 2.5 and w[2] == WEIGHT_QUANTUM  # at least one step
    assert abs(w[1] - 0.7312345678) <= WEIGHT_QUANTUM / 2
    assert np.all(np.rint(w / WEIGHT_QUANTUM) * WEIGHT_QUANTUM == w)
    assert sum(w) - w[1] - w[0] - w[3] == w[2]  # sums of grid values are exact
