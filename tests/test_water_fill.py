"""The water-fill: fluid.flows' rates are the plain water-fill's, bit for bit, ties in index order."""

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from xsim.des.fluid_state import FULL, PASS, Fluid, Stage, Status, new_stage, quantize_weights
from xsim.des.fluid import touch
from xsim.des.water_fill import flows


def reference_flows(q, left, rate, weight, cap, drain):
    """The water-fill written plainly: a stable sort by demand per unit weight, then fill."""
    n = len(q)
    key = np.where(q > 0, np.inf, np.where(left > 0, rate / weight, -1.0))
    out, budget, total_w = np.zeros(n), drain, 0.0
    for i in range(n):  # summed in index order, as flows does
        total_w += weight[i] if key[i] >= 0 else 0.0
    order = [int(i) for i in np.argsort(key, kind="mergesort") if key[i] >= 0]
    for m, i in enumerate(order):
        level = budget / total_w
        if key[i] <= level:
            out[i], budget, total_w = rate[i], budget - rate[i], total_w - weight[i]
        else:
            for j in order[m:]:
                out[j] = level * weight[j]
            break
    inj = np.where(left <= 0, 0.0, np.where(q < cap, rate, np.minimum(rate, out)))
    return out, inj


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 12).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from([0.0, 0.0, 1.0, 3.0]), min_size=n, max_size=n),
    st.lists(st.sampled_from([0.0, 0.0, 2.0]), min_size=n, max_size=n),
    st.lists(st.sampled_from([10.1, 20.2, 40.4]) | st.floats(1.0, 50.0), min_size=n, max_size=n),  # ties
    st.lists(st.sampled_from([1.0, 2.0, 4.0]) | st.floats(0.5, 2.0), min_size=n, max_size=n),      # by 2**k
    st.floats(1.0, 200.0))))
@example(([0.0, 0.0, 1.0], [2.0, 2.0, 2.0], [10.1, 20.2, 30.0], [1.0, 2.0, 1.0], 76.59395462609407))  # a tie that shows
def test_flows_is_a_stable_water_fill(state):
    """flows (the reference's scan of every producer) gives the plain water-fill's rates bit for
    bit; equal keys pass through in index order, which shows in the last bits of the others' share."""
    q, left, rate, weight = (np.array(x, dtype=float) for x in state[:4])
    weight = quantize_weights(weight)
    drain = state[4]
    n, cap = len(q), 3.0
    stage = new_stage(drain, cap, weight)
    x = stage.fluid
    x[Fluid.Q0], x[Fluid.L0], x[Fluid.RATE] = q, left, np.where(left > 0, rate, 0.0)
    for k in range(n):
        touch(stage.count, stage.status, stage.lists, k)
    flows(*stage, n, 0.0, True)
    mode, level = stage.status[Status.MODE], stage.stage[Stage.LEVEL]
    out = np.where(mode == PASS, rate, np.where((q > 0) | (left > 0), level * weight, 0.0))
    inj = np.where(mode == FULL, out, np.where(left > 0, rate, 0.0))
    ref_out, ref_inj = reference_flows(q, left, rate, weight, cap, drain)
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(inj, ref_inj)


def test_candidates_only_find_what_the_scan_finds():
    """The fast engine's flows (scan_all=False) looks only at touched producers, active issuers and
    full producers the level overtakes; after the same touches it sets the same modes and level."""
    weight = quantize_weights(np.array([1.0, 0.5, 2.0, 1.0]))
    results = []
    for scan_all in (True, False):
        stage = new_stage(100.0, 5.0, weight)
        x = stage.fluid
        x[Fluid.Q0], x[Fluid.L0], x[Fluid.RATE] = [0.0, 2.0, 0.0, 0.0], [3.0, 0.0, 4.0, 0.0], [40.0, 0.0, 80.0, 0.0]
        for k in range(4):
            touch(stage.count, stage.status, stage.lists, k)
        flows(*stage, 4, 0.0, scan_all)
        results.append((stage.status[Status.MODE].copy(), stage.stage[Stage.LEVEL], x[Fluid.KT].copy()))
    (m0, l0, k0), (m1, l1, k1) = results
    np.testing.assert_array_equal(m0, m1)
    assert l0 == l1
    np.testing.assert_array_equal(k0, k1)
