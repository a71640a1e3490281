"""Tile tables as DES workloads: bytes, dependencies, the L1 release modes, per-tile metrics."""

import numpy as np
import pytest

from tests.helpers import toy_platform
from xsim.des import simulate
from xsim.moe import metrics
from xsim.moe.des_workload import tile_workload
from xsim.moe.layout import expert_layout
from xsim.moe.routing import route
from xsim.moe.schedule import interleaved_table, wave_table
from xsim.moe.shapes import MoEShape

SHAPE = MoEShape(hidden=256, intermediate=256, experts=4, topk=2, tokens=200, block_m=64, block_n1=128, block_n2=128)


def case(schedule="wave", release="drain", staging=0, streams=4, platform=None):
    lay = expert_layout(SHAPE, route(SHAPE, "zipf", 1.0, seed=1))
    table = (wave_table if schedule == "wave" else interleaved_table)(SHAPE, lay, streams)
    plat = platform or toy_platform(t_iss0_us=1.0, drain_gbps=2.0, capacity_bytes=4096.0)
    return table, lay, tile_workload(table, SHAPE, lay, plat, t_l1_us=3.0, t_l2_us=2.0,
                                     staging_depth=staging, l1_release=release)


def test_bytes_and_counters_follow_the_table():
    table, lay, w = case()
    assert w.bytes.sum() == lay.n_rows * 128 * 2 * (SHAPE.hidden // 128)   # every row, every L2 n-block, bf16
    l2 = w.kind == 1
    assert np.all(w.wait_counter[l2] == table.tiles[l2, 2]) and np.all(w.wait_value[l2] == 2)
    assert np.all(w.signal_counter[w.kind == 0] == table.tiles[w.kind == 0, 2])
    assert np.all(w.signal_on_drain == (w.kind == 0))


@pytest.mark.parametrize("schedule", ["wave", "interleaved"])
def test_no_l2_mainloop_starts_before_its_l1_tiles_signal(schedule):
    table, lay, w = case(schedule)
    r = simulate(w, engine="simpy", trace=False)
    t = r.times
    for m in range(table.n_mblocks):
        l1 = (w.kind == 0) & (table.tiles[:, 2] == m)
        l2 = (w.kind == 1) & (table.tiles[:, 2] == m)
        assert t.mainloop_start[l2].min() >= t.drain_end[l1].max() - 1e-9   # signal at the L1 drain end
    fast = simulate(w, engine="fast", trace=False)
    np.testing.assert_allclose(fast.times.issue_end, t.issue_end, atol=1e-9)


def test_release_modes_order_the_makespan():
    # a slow link, short mainloops: an L1 release that waits for the SM's stores delays L2 tiles
    # elsewhere (drain), and blocking the compute role on it delays the SM too (block)
    plat = toy_platform(t_iss0_us=0.5, drain_gbps=0.5, capacity_bytes=2.0 * 2**20)
    l2_start = {}
    for release in ("issue", "drain", "block"):
        _, _, w = case("interleaved", release, platform=plat)
        r = simulate(w, engine="fast", trace=False)
        l2_start[release] = r.times.mainloop_start[w.kind == 1].mean()
    assert l2_start["issue"] < l2_start["drain"] < l2_start["block"]


def test_stall_with_s0_is_the_wait_after_the_previous_issue():
    table, lay, w = case("interleaved")
    r = simulate(w, engine="fast", trace=False)
    tiles = metrics.per_tile(r)
    t = r.times
    p0 = slice(w.offsets[0], w.offsets[1])
    expect = t.mainloop_start[p0] - np.concatenate([[0.0], t.issue_end[p0][:-1]])
    np.testing.assert_allclose(tiles["stall_us"][: w.offsets[1]], expect)
    assert np.all(tiles["stall_us"] >= -1e-9)
    np.testing.assert_allclose(tiles["eq15_stall_us"], tiles["span_us"])   # S = 0: nothing covers the span


def test_eq15_with_double_buffering_subtracts_the_next_mainloop():
    table, lay, w = case("wave", staging=2)
    r = simulate(w, engine="fast", trace=False)
    tiles = metrics.per_tile(r)
    assert np.all(tiles["eq15_stall_us"] <= np.maximum(tiles["span_us"] - 0.0, 0) + 1e-12)
    assert tiles["eq15_stall_us"].sum() < tiles["span_us"].sum()


def test_unknown_release_is_an_error():
    with pytest.raises(ValueError, match='"l1_release" must be one of'):
        case(release="eventually")


def test_the_prologue_delays_each_programs_first_tile_only():
    table, lay, w = case()
    plat = toy_platform(t_iss0_us=1.0, drain_gbps=2.0, capacity_bytes=4096.0)
    p = tile_workload(table, SHAPE, lay, plat, t_l1_us=3.0, t_l2_us=2.0, prologue_us=5.0)
    firsts = table.offsets[:-1][np.diff(table.offsets) > 0]
    extra = p.mainloop_us - w.mainloop_us
    assert np.allclose(extra[firsts], 5.0) and np.count_nonzero(extra) == len(firsts)
    later = simulate(p, engine="fast", trace=False).makespan_us
    assert later == pytest.approx(simulate(w, engine="fast", trace=False).makespan_us + 5.0, abs=1.0)


@pytest.mark.parametrize("release", ["drain", "block"])
def test_mainloop_factors_scale_each_tile_and_skip_the_fences(release):
    table, lay, w = case(release=release)
    plat = toy_platform(t_iss0_us=1.0, drain_gbps=2.0, capacity_bytes=4096.0)
    factor = 1.0 + 0.01 * np.arange(len(table.tiles))
    f = tile_workload(table, SHAPE, lay, plat, t_l1_us=3.0, t_l2_us=2.0, l1_release=release,
                      mainloop_factor=factor)
    real = f.kind != 2
    assert np.allclose(f.mainloop_us[real], w.mainloop_us[real] * factor)
    assert np.all(f.mainloop_us[~real] == 0.0)
    with pytest.raises(ValueError, match="one value per tile"):
        tile_workload(table, SHAPE, lay, plat, t_l1_us=3.0, t_l2_us=2.0, mainloop_factor=factor[:-1])
