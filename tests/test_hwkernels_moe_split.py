"""K-split Linear-1 tiles: the host rule, the split tables and the kernel's merge (interpreter)."""

import os
from dataclasses import replace
from types import SimpleNamespace

os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from hwkernels import moe  # noqa: E402
from hwkernels.moe_gemm import gemm_table  # noqa: E402
from hwkernels.moe_split import l1_split, workspace  # noqa: E402
from xsim.moe.layout import expert_layout  # noqa: E402
from xsim.moe.routing import route  # noqa: E402
from xsim.moe.shapes import MoEShape  # noqa: E402

CFG = moe.KernelConfig(block_k=16, max_spins=50)


@pytest.mark.parametrize("n_tiles, split", [(48, 2), (64, 2), (96, 4), (192, 2), (128, 1),
                                            (256, 1), (512, 1), (1408, 1), (1, 4)])
def test_split_only_where_it_cuts_the_waves_by_a_quarter(n_tiles, split):
    assert l1_split(n_tiles, 132) == split


def test_split_rule_rejects_empty_launches():
    with pytest.raises(ValueError, match='"n_tiles"'):
        l1_split(0, 132)


def test_split_table_holds_every_part_once_on_distinct_streams():
    t = gemm_table(0, n_mblocks=3, nblocks=2, n_streams=8, l1_nblocks=2, split=4)
    assert t.l1_split == 4 and t.offsets[-1] == len(t.tiles) == 24
    assert sorted(map(tuple, t.tiles[:, 2:].tolist())) == [(m, p) for m in range(3)
                                                           for p in range(8)]
    stream_of = {tuple(t.tiles[i, 2:]): s for s in range(8)
                 for i in range(t.offsets[s], t.offsets[s + 1])}
    for m in range(3):
        for n in range(2):
            assert len({stream_of[(m, n * 4 + p)] for p in range(4)}) == 4
    with pytest.raises(ValueError, match='"split"'):
        gemm_table(1, n_mblocks=3, nblocks=2, n_streams=8, l1_nblocks=2, split=2)


def tiny(precision):
    return MoEShape(hidden=64, intermediate=64, experts=4, topk=2, tokens=24,
                    precision=precision, block_m=16, block_n1=32, block_n2=32)


def split_layer_table(shape, lay, split, reverse_parts):
    """One stream: every L1 part (parts of a tile in reverse order if asked), then every L2."""
    exp = lay.mblock_expert()
    parts = list(range(split))[::-1] if reverse_parts else list(range(split))
    l1 = [(0, int(exp[m]), m, n * split + p) for m in range(lay.n_mblocks)
          for n in range(shape.l1_nblocks) for p in parts]
    l2 = [(1, int(exp[m]), m, n) for m in range(lay.n_mblocks) for n in range(shape.l2_nblocks)]
    return SimpleNamespace(offsets=np.array([0, len(l1) + len(l2)], np.int32),
                           tiles=np.array(l1 + l2, np.int32), l1_nblocks=shape.l1_nblocks,
                           l1_split=split)


def run(shape, lay, table, data):
    out = torch.full((shape.tokens, shape.topk, shape.hidden), float("nan"), dtype=torch.bfloat16)
    fused = moe.FusedMoE(shape, lay, table, data, out, CFG)
    fused.launch()
    fused.finish()
    return out, fused


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
@pytest.mark.parametrize("split, reverse", [(2, False), (2, True), (4, True)])
def test_split_layer_matches_the_reference_and_the_unsplit_kernel(precision, split, reverse):
    shape = tiny(precision)
    lay = expert_layout(shape, route(shape, "zipf", 1.2, seed=0))
    data = moe.make_inputs(shape, seed=1)
    ref = moe.reference(data, lay, shape.topk)
    out, fused = run(shape, lay, split_layer_table(shape, lay, split, reverse), data)
    ok, err = moe.check(out, ref)
    assert ok, err
    assert fused.ws_cnt.tolist() == [split] * (lay.n_mblocks * shape.l1_nblocks)
    assert fused.l2_full.tolist() == [shape.l1_nblocks] * lay.n_mblocks   # one signal per tile
    whole, _ = run(shape, lay, split_layer_table(shape, lay, 1, False), data)
    assert torch.allclose(out.float(), whole.float(), atol=2e-2 * float(ref.abs().max()))


def test_split_must_divide_hidden_into_k_steps():
    shape = tiny("bf16")
    lay = expert_layout(shape, route(shape, "balanced", seed=0))
    data = moe.make_inputs(shape, seed=1)
    out = torch.empty(shape.tokens, shape.topk, shape.hidden, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match='"l1_split"'):
        moe.FusedMoE(shape, lay, split_layer_table(shape, lay, 8, False), data, out, CFG)


def test_workspace_sizes():
    ws, cnt = workspace(2, 6, 16, 32, "cpu")
    assert ws.numel() == 6 * 2 * 2 * 16 * 32 and cnt.tolist() == [0] * 6
    ws, cnt = workspace(1, 6, 16, 32, "cpu")
    assert ws.numel() == 1 and cnt.numel() == 1
