"""The per-rank row layout: rows grouped by local expert, exact offsets, m-blocks per expert."""

import numpy as np

from xsim.moe.layout import expert_layout
from xsim.moe.routing import route
from xsim.moe.shapes import MoEShape


def test_layout_covers_exactly_the_rank_rows():
    shape = MoEShape(hidden=256, intermediate=256, experts=16, topk=3, tokens=500, ep=2, block_m=64)
    r = route(shape, "zipf", 1.0, seed=5)
    total = 0
    for rank in range(2):
        lay = expert_layout(shape, r, rank)
        experts = r.topk_ids[lay.row_token, lay.row_slot] - rank * 8
        assert np.all(np.diff(experts) >= 0)
        for e in range(8):
            lo, hi = lay.expert_rows[e], lay.expert_rows[e + 1]
            assert np.all(experts[lo:hi] == e)
            assert np.all(np.diff(lay.row_token[lo:hi]) > 0)
            assert lay.expert_mblock[e + 1] - lay.expert_mblock[e] == -(-(hi - lo) // 64)
        np.testing.assert_array_equal(lay.row_weight, r.topk_weights[lay.row_token, lay.row_slot])
        valid = lay.mblock_valid_rows()
        assert valid.sum() == lay.n_rows and np.all((valid > 0) & (valid <= 64))
        total += lay.n_rows
    assert total == 1000 * 3


def test_dtypes_follow_the_contract():
    shape = MoEShape(hidden=128, intermediate=128, experts=4, topk=2, tokens=10)
    lay = expert_layout(shape, route(shape, "balanced"))
    for name in ("row_token", "row_slot", "expert_rows", "expert_mblock"):
        assert getattr(lay, name).dtype == np.int32
    assert lay.row_weight.dtype == np.float32
    assert lay.expert_rows[-1] == 20 and len(lay.expert_rows) == 5
