"""MoEShape: the checks that make impossible configs one-line errors, and derived sizes."""

import pytest

from xsim.moe.shapes import MoEShape


def shape(**kw):
    base = dict(hidden=1024, intermediate=512, experts=16, topk=4, tokens=256)
    return MoEShape(**{**base, **kw})


def test_derived_sizes():
    s = shape(precision="fp8", ep=4, block_n1=64, block_n2=256)
    assert s.experts_local == 4
    assert s.l1_nblocks == 8 and s.l2_nblocks == 4
    assert s.expected_rows_per_expert == 256 * 4 * 4 / 16
    assert s.expert_weight_bytes() == 3 * 1024 * 512
    assert s.combine_bytes(100) == 100 * 256 * 2


@pytest.mark.parametrize("kw, message", [
    (dict(experts=10, ep=4), '"experts" (10) must be divisible by "ep" (4)'),
    (dict(topk=17), '"topk" (17) must be <= "experts" (16)'),
    (dict(block_n1=96), '"block_n1" (96) must divide "intermediate" (512)'),
    (dict(block_n2=384), '"block_n2" (384) must divide "hidden" (1024)'),
    (dict(precision="fp4"), '"precision" must be one of bf16, fp8'),
    (dict(tokens=0), '"tokens" must be a whole number > 0'),
])
def test_impossible_shapes_raise(kw, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        shape(**kw)
