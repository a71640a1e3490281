"""The processor-sharing simulator: hand-computed two-tile timelines and its error paths."""

import numpy as np
import pytest

from xsim.moe.contention import ContentionTiles, simulate
from xsim.params import ParamError


def tiles(n, offsets=None, **kw):
    """n tiles, one per stream unless offsets are given; no fixed costs, no dependencies."""
    base = dict(offsets=np.arange(n + 1) if offsets is None else np.asarray(offsets),
                pre_us=np.zeros(n), compute_us=np.ones(n), post_us=np.zeros(n), w_bytes=np.zeros(n),
                w_block=np.arange(n), a_bytes=np.zeros(n), a_block=np.arange(n), wait_counter=np.full(n, -1),
                wait_value=np.zeros(n, int), signal_counter=np.full(n, -1), n_counters=0)
    base.update({k: np.asarray(v) if isinstance(v, list) else v for k, v in kw.items()})
    return ContentionTiles(**base)


def test_bandwidth_bound_pair_shares_evenly():
    # each asks 100 B / 10 us = 10 B/us; 20 > 10 B/us: 5 each, so 100 B take 20 us
    r = simulate(tiles(2, compute_us=[10.0, 10.0], w_bytes=[100.0, 100.0]), 10.0)
    assert r.mainloop_end_us.tolist() == pytest.approx([20.0, 20.0])
    assert r.makespan_us == pytest.approx(20.0)


def test_compute_bound_pair_runs_at_compute_speed():
    # 10 + 10 B/us fit under 100 B/us: each takes its 10 us of compute
    r = simulate(tiles(2, compute_us=[10.0, 10.0], w_bytes=[100.0, 100.0]), 100.0)
    assert r.mainloop_us.tolist() == pytest.approx([10.0, 10.0])


def test_block_read_by_concurrent_mainloops_is_read_once():
    # the same weight block: each charged 50 B, 5 + 5 B/us fit under 10: compute-bound again
    r = simulate(tiles(2, compute_us=[10.0, 10.0], w_bytes=[100.0, 100.0], w_block=[0, 0]), 10.0)
    assert r.mainloop_us.tolist() == pytest.approx([10.0, 10.0])


def test_max_min_fair_small_demand_is_served_first():
    # A asks 2 B/us (20 B / 10 us) <= the level 5: served; B gets the other 8 B/us of its 20.
    # At t = 10 A ends, B has read 80 of its 200 B; alone it gets 10 B/us: 120 B more, t = 22.
    r = simulate(tiles(2, compute_us=[10.0, 10.0], w_bytes=[20.0, 200.0]), 10.0)
    assert r.mainloop_end_us.tolist() == pytest.approx([10.0, 22.0])


def test_weighted_share():
    # weights 3 : 1 of 8 B/us: 6 and 2. A reads 200 B in 33.33 us, B 66.67 B by then; alone B
    # gets 8 B/us (it asks 20): 133.33 B in 16.67 us, t = 50.
    r = simulate(tiles(2, compute_us=[10.0, 10.0], w_bytes=[200.0, 200.0], weight=[3.0, 1.0]), 8.0)
    assert r.mainloop_end_us.tolist() == pytest.approx([100.0 / 3.0, 50.0])


def test_dependency_order_and_fixed_costs():
    # stream 0: pre 0-1, mainloop 1-6, post 6-8, signals counter 0 at 8;
    # stream 1 waits for it, then pre 8-9, mainloop 9-12, post 12-12.5
    t = tiles(2, pre_us=[1.0, 1.0], compute_us=[5.0, 3.0], post_us=[2.0, 0.5], wait_counter=[-1, 0],
              wait_value=[0, 1], signal_counter=[0, -1], n_counters=1)
    r = simulate(t, 1.0)
    assert r.mainloop_start_us.tolist() == pytest.approx([1.0, 9.0])
    assert r.mainloop_end_us.tolist() == pytest.approx([6.0, 12.0])
    assert r.tile_end_us.tolist() == pytest.approx([8.0, 12.5])
    assert r.makespan_us == pytest.approx(12.5)


def test_one_stream_runs_its_tiles_in_order():
    t = tiles(2, offsets=[0, 2], pre_us=[0.5, 0.5], compute_us=[2.0, 3.0], post_us=[1.0, 1.0])
    r = simulate(t, 1.0)
    assert r.mainloop_start_us.tolist() == pytest.approx([0.5, 4.0])
    assert r.makespan_us == pytest.approx(8.0)


def test_bandwidth_is_freed_when_a_mainloop_ends():
    # two 100 B pure-transfer tiles (no compute time) on 10 B/us: 5 each; the first (50 B) ends at
    # t = 10, then the second reads its last 50 B alone at 10 B/us: t = 15
    r = simulate(tiles(2, compute_us=[0.0, 0.0], w_bytes=[50.0, 100.0]), 10.0)
    assert r.mainloop_end_us.tolist() == pytest.approx([10.0, 15.0])


def test_deadlock_is_one_clear_error():
    t = tiles(1, wait_counter=[0], wait_value=[1], n_counters=1)
    with pytest.raises(ParamError, match="deadlock"):
        simulate(t, 1.0)


@pytest.mark.parametrize("change, message", [
    ({"compute_us": [-1.0]}, '"compute_us" must be finite and >= 0'),
    ({"compute_us": [0.0]}, '"compute_us" > 0 or bytes > 0'),
    ({"w_bytes": [1.0, 2.0]}, '"w_bytes" must have one value per tile'),
    ({"weight": [0.0]}, '"weight" must be > 0'),
    ({"wait_counter": [3]}, '"wait_counter" must be -1 or a counter id'),
    ({"w_block": [-2]}, '"w_block" and "a_block" must be >= 0'),
    ({"offsets": [0, 2]}, '"pre_us" must have one value per tile'),
])
def test_bad_tiles_are_one_line_param_errors(change, message):
    with pytest.raises(ParamError, match=message):
        tiles(1, **change)


@pytest.mark.parametrize("bw", [0.0, -1.0, float("inf"), float("nan")])
def test_bad_bandwidth(bw):
    with pytest.raises(ParamError, match='"hbm_bytes_per_us" must be a finite number > 0'):
        simulate(tiles(1), bw)
