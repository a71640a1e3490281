"""Per-tile mainloop spread: lognormal factors of mean 1 keyed by each tile's identity."""

import numpy as np
import pytest

from xsim.moe.layout import expert_layout
from xsim.moe.routing import route
from xsim.moe.schedule import interleaved_table, wave_table
from xsim.moe.shapes import MoEShape
from xsim.spread import tile_factors


def many_tiles(n=40000):
    idx = np.arange(n)
    return np.stack([idx % 2, idx // 2 % 7, idx // 14, idx % 5], axis=1).astype(np.int32)


def test_factors_have_mean_one_and_the_kinds_cv():
    tiles = many_tiles()
    f = tile_factors(tiles, {0: 0.2, 1: 0.05}, seed=3)
    for kind, cv in ((0, 0.2), (1, 0.05)):
        x = f[tiles[:, 0] == kind]
        assert x.mean() == pytest.approx(1.0, abs=0.01) and x.std() / x.mean() == pytest.approx(cv, rel=0.05)
        assert x.min() > 0
    assert np.all(tile_factors(tiles, {}, seed=3) == 1.0)              # no spread: every tile alike
    assert np.all(tile_factors(tiles, {0: 0.0, 1: 0.0}) == 1.0)


def test_a_tile_draws_the_same_factor_in_both_schedules():
    shape = MoEShape(hidden=256, intermediate=256, experts=4, topk=2, tokens=300, block_m=64,
                     block_n1=128, block_n2=128)
    lay = expert_layout(shape, route(shape, "zipf", 1.0, seed=1))
    w, i = wave_table(shape, lay, 8), interleaved_table(shape, lay, 8)
    fw, fi = tile_factors(w.tiles, {0: 0.3, 1: 0.3}, 5), tile_factors(i.tiles, {0: 0.3, 1: 0.3}, 5)
    by_tile = {tuple(t): f for t, f in zip(w.tiles.tolist(), fw)}
    assert all(by_tile[tuple(t)] == f for t, f in zip(i.tiles.tolist(), fi))
    assert len(set(fw.tolist())) > len(fw) // 2                          # tiles differ from each other
    assert not np.array_equal(fw, tile_factors(w.tiles, {0: 0.3, 1: 0.3}, 6))   # the seed matters


def test_bad_input():
    with pytest.raises(ValueError, match="seed"):
        tile_factors(many_tiles(10), {0: 0.1}, seed=-1)
    with pytest.raises(ValueError, match=r"\[n_tiles, 4\]"):
        tile_factors(np.zeros((3, 2), np.int32), {0: 0.1})
    with pytest.raises(ValueError, match=">= 0"):
        tile_factors(many_tiles(10), {0: -0.1})
