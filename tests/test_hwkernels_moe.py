"""The fused MoE kernel under Triton's interpreter (tiny shapes) against the torch reference.

The interpreter runs programs one after another, so every table here is deadlock-free when
run sequentially: one stream (grid = 1), or streams whose waits only depend on lower streams.
"""

import os
from dataclasses import replace
from types import SimpleNamespace

os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from hwkernels import moe, moe_reference  # noqa: E402
from xsim.moe.layout import expert_layout  # noqa: E402
from xsim.moe.routing import route  # noqa: E402
from xsim.moe.schedule import interleaved_table, wave_table  # noqa: E402
from xsim.moe.shapes import MoEShape  # noqa: E402

CFG = moe.KernelConfig(block_k=32, max_spins=50)


def tiny_shape(precision="bf16"):
    return MoEShape(hidden=64, intermediate=64, experts=4, topk=2, tokens=24,
                    precision=precision, block_m=16, block_n1=32, block_n2=32)


def poisoned_out(shape):
    return torch.full((shape.tokens, shape.topk, shape.hidden), float("nan"),
                      dtype=torch.bfloat16)


def run_table(shape, lay, table, data, config=CFG):
    out = poisoned_out(shape)
    fused = moe.FusedMoE(shape, lay, table, data, out, config)
    fused.launch()
    fused.finish()
    return out, fused


@pytest.mark.parametrize("tma", [True, False])
@pytest.mark.parametrize("precision", ["bf16", "fp8"])
@pytest.mark.parametrize("schedule", ["wave", "interleaved"])
def test_kernel_matches_reference(precision, schedule, tma):
    shape = tiny_shape(precision)
    lay = expert_layout(shape, route(shape, "zipf", 1.2, seed=0))
    assert np.any(lay.mblock_valid_rows() < shape.block_m)   # partial m-blocks present
    table = (wave_table if schedule == "wave" else interleaved_table)(shape, lay, n_streams=1)
    table.validate()
    data = moe_reference.make_inputs(shape, seed=1)
    ref = moe_reference.reference(data, lay, shape.topk)
    out, _ = run_table(shape, lay, table, data, replace(CFG, tma=tma))
    ok, err = moe_reference.check(out, ref)
    assert ok, err
    assert float(ref.abs().max()) > 0.5          # a real signal, not zeros vs zeros


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_host_made_descriptors_give_the_same_layer(precision):
    shape = tiny_shape(precision)
    lay = expert_layout(shape, route(shape, "zipf", 1.2, seed=0))
    table = interleaved_table(shape, lay, n_streams=1)
    data = moe_reference.make_inputs(shape, seed=1)
    out, fused = run_table(shape, lay, table, data, replace(CFG, host_desc=True))
    assert type(fused._args()[0][-1]).__name__ == "TensorDescriptor"
    ok, err = moe_reference.check(out, moe_reference.reference(data, lay, shape.topk))
    assert ok, err
    plain, _ = run_table(shape, lay, table, data)
    assert torch.equal(out, plain)


def l1_then_l2_streams(shape, lay, order):
    """Stream 0 runs every L1 tile (m-blocks in `order`), stream 1 every L2 tile."""
    l1 = [(0, e, m, n) for m in order for n in range(shape.l1_nblocks)
          for e in [int(lay.mblock_expert()[m])]]
    l2 = [(1, e, m, n) for m in order for n in range(shape.l2_nblocks)
          for e in [int(lay.mblock_expert()[m])]]
    return SimpleNamespace(offsets=np.array([0, len(l1), len(l1) + len(l2)], np.int32),
                           tiles=np.array(l1 + l2, np.int32), l1_nblocks=shape.l1_nblocks)


@pytest.mark.parametrize("tma", [True, False])
def test_partial_mblock_rows_are_masked(tma):
    # Reversed m-block order: each expert's partial last m-block runs after the next
    # expert's first one, so unmasked Linear-1 rows would overwrite that expert's rows and
    # unmasked Combine rows would overwrite token 0's slot 0.
    shape = tiny_shape()
    lay = expert_layout(shape, route(shape, "zipf", 1.2, seed=0))
    table = l1_then_l2_streams(shape, lay, order=list(range(lay.n_mblocks))[::-1])
    data = moe_reference.make_inputs(shape, seed=2)
    out, fused = run_table(shape, lay, table, data, replace(CFG, tma=tma))
    ok, err = moe_reference.check(out, moe_reference.reference(data, lay, shape.topk))
    assert ok, err
    assert fused.l2_full.tolist() == [shape.l1_nblocks] * lay.n_mblocks


def test_two_streams_counters_release_the_waiters():
    shape = tiny_shape()
    lay = expert_layout(shape, route(shape, "balanced", seed=3))
    table = l1_then_l2_streams(shape, lay, order=list(range(lay.n_mblocks)))
    data = moe_reference.make_inputs(shape, seed=3)
    # per-loop pipeline depths and the acquire-load poll reach the kernel (the interpreter
    # keeps the relaxed-poll wait and ignores the depths)
    out, fused = run_table(shape, lay, table, data, replace(CFG, num_stages2=5, poll=1))
    assert moe_reference.check(out, moe_reference.reference(data, lay, shape.topk))[0]
    assert fused._args()[1]["NS2"] == 5 and fused._args()[1]["POLL"] == 0


def test_missing_dependency_times_out_instead_of_hanging():
    shape = tiny_shape()
    lay = expert_layout(shape, route(shape, "balanced", seed=4))
    e = int(lay.mblock_expert()[1])
    table = SimpleNamespace(offsets=np.array([0, 3], np.int32),
                            tiles=np.array([(1, e, 1, 0), (0, e, 1, 0), (0, e, 1, 1)],
                                           np.int32),
                            l1_nblocks=shape.l1_nblocks)
    data = moe_reference.make_inputs(shape, seed=4)
    fused = moe.FusedMoE(shape, lay, table, data, poisoned_out(shape), CFG)
    fused.launch()
    with pytest.raises(moe.MoEKernelError, match="tile 0"):
        fused.finish()
    assert fused.l2_full.tolist()[1] == 0        # the program stopped: no later L1 ran


def test_mblock_bounds_follow_the_layout():
    lay = SimpleNamespace(expert_rows=np.array([0, 5, 5, 21]),
                          expert_mblock=np.array([0, 1, 1, 3]))
    row0, rend = moe.mblock_bounds(lay, 16)
    assert row0.tolist() == [0, 5, 21]
    assert rend.tolist() == [5, 21, 21]


def test_kernel_config_is_validated():
    with pytest.raises(ValueError, match='"block_k"'):
        moe.KernelConfig(block_k=48)
    with pytest.raises(ValueError, match='"signal"'):
        moe.KernelConfig(signal=2)
    with pytest.raises(ValueError, match='"acc_k2"'):
        moe.KernelConfig(block_k=64, block_k2=64, acc_k2=128)
    with pytest.raises(ValueError, match='"poll"'):
        moe.KernelConfig(poll=2)
    with pytest.raises(ValueError, match='"num_stages2"'):
        moe.KernelConfig(num_stages2=0)
    assert moe.KernelConfig(num_stages=3).stages2 == 3
    assert moe.KernelConfig(num_stages=3, num_stages2=5).stages2 == 5


def test_ep2_combine_writes_each_token_to_its_source_rank():
    shape = MoEShape(hidden=64, intermediate=64, experts=4, topk=2, tokens=12, ep=2,
                     block_m=16, block_n1=32, block_n2=32)
    lay = expert_layout(shape, route(shape, "zipf", 1.2, seed=5), rank=0)
    table = wave_table(shape, lay, n_streams=1)
    data = moe_reference.make_inputs(shape, seed=5)
    ref = moe_reference.reference(data, lay, shape.topk)             # [2 * tokens, topk, H]
    buf = torch.full((2, shape.tokens + 3, shape.topk, shape.hidden), float("nan"),
                     dtype=torch.bfloat16)
    outs = [buf[0, :shape.tokens], buf[1, :shape.tokens]]  # two ranks' receive buffers
    fused = moe.FusedMoE(shape, lay, table, data, outs[0], CFG, rank_outs=outs)
    fused.launch()
    fused.finish()
    for r in range(2):
        t0 = r * shape.tokens
        routed = moe_reference.routed_slots(lay, shape.tokens, shape.topk, first_token=t0)
        assert routed.any()
        ok, err = moe_reference.check(outs[r], ref[t0:t0 + shape.tokens], routed)
        assert ok, (r, err)
        assert torch.isnan(outs[r][~routed].float()).all()  # other ranks' experts: untouched
    assert torch.isnan(buf[:, shape.tokens:].float()).all()


def test_run_clock_is_none_under_the_interpreter_and_cycles_over_ns_otherwise():
    torch = pytest.importorskip("torch")
    from hwkernels.moe import FusedMoE

    fused = object.__new__(FusedMoE)              # only the clock sums
    fused.clock = torch.tensor([0, 0], dtype=torch.int64)
    assert fused.run_clock_mhz() is None          # CLK is off under the interpreter
    fused.clock = torch.tensor([1_700_000, 1_000_000], dtype=torch.int64)
    assert fused.run_clock_mhz() == pytest.approx(1700.0)
