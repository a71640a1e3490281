"""Seeded routing: distinct experts per token, weights sum to one, the skew it promises."""

import numpy as np
import pytest

from xsim.moe.routing import route
from xsim.moe.shapes import MoEShape

SHAPE = MoEShape(hidden=256, intermediate=256, experts=32, topk=4, tokens=2048, ep=2)


@pytest.mark.parametrize("kind, skew", [("balanced", 0.0), ("zipf", 1.2), ("hot", 0.6), ("blocked", 0.0)])
def test_routing_is_valid_and_seeded(kind, skew):
    r = route(SHAPE, kind, skew, seed=3)
    assert r.topk_ids.shape == (4096, 4) and r.topk_ids.dtype == np.int32
    assert r.topk_weights.dtype == np.float32
    assert np.all((r.topk_ids >= 0) & (r.topk_ids < 32))
    assert all(len(set(row)) == 4 for row in r.topk_ids.tolist())
    np.testing.assert_allclose(r.topk_weights.sum(axis=1), 1.0, rtol=1e-5)
    again = route(SHAPE, kind, skew, seed=3)
    np.testing.assert_array_equal(r.topk_ids, again.topk_ids)
    assert not np.array_equal(r.topk_ids, route(SHAPE, kind, skew, seed=4).topk_ids)


def test_balanced_gives_every_expert_the_same_rows():
    counts = route(SHAPE, "balanced", seed=1).expert_rows(32)
    assert np.all(counts == 4096 * 4 // 32)


@pytest.mark.parametrize("experts, topk, tokens", [(32, 4, 2048), (16, 2, 4096), (6, 4, 300)])
def test_blocked_gives_each_expert_runs_of_consecutive_tokens(experts, topk, tokens):
    shape = MoEShape(hidden=256, intermediate=256, experts=experts, topk=topk, tokens=tokens)
    ids = route(shape, "blocked", seed=5).topk_ids
    assert all(len(set(row)) == topk for row in ids.tolist())
    counts = np.bincount(ids.ravel(), minlength=experts)
    assert counts.max() - counts.min() <= 1
    for j in range(topk):   # per choice, the expert changes at most experts / topk + 1 times down the tokens
        assert np.count_nonzero(np.diff(ids[:, j])) <= experts // topk + 1


def test_zipf_skew_orders_popularity():
    flat = np.sort(route(SHAPE, "zipf", 0.0, seed=0).expert_rows(32))
    steep = np.sort(route(SHAPE, "zipf", 1.5, seed=0).expert_rows(32))
    assert steep[-1] > 2 * flat[-1]
    assert flat.max() < 1.3 * flat.mean()


def test_hot_expert_share():
    counts = route(SHAPE, "hot", 0.5, seed=2).expert_rows(32)
    assert abs(counts.max() / 4096 - 0.5) < 0.05


@pytest.mark.parametrize("kind, skew", [("zipf", -1.0), ("hot", 1.2), ("uniform", 1.0)])
def test_bad_routing_raises(kind, skew):
    with pytest.raises(ValueError):
        route(SHAPE, kind, skew)
