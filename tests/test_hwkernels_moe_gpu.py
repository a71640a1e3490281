"""The fused MoE kernel on the GPU with the shipped settings: both L2 wait implementations
(poll = 1 acquire loads, poll = 0 relaxed polls, then one acquire) against the torch reference
and each other, with every SM's program waiting on others' Linear-1 tiles, and a missing
dependency that must time out, not hang."""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")      # conftest skips these without an NVIDIA GPU


def _shape(precision):
    from xsim.moe.shapes import MoEShape

    return MoEShape(hidden=512, intermediate=512, experts=8, topk=2, tokens=2048,
                    precision=precision)


def _problem(precision):
    """bf16: a small layer; fp8: a catalog config (its per-expert K decides how far sm_90's
    fp8 accumulation sits from the check's tolerance, measured there at 0.78)."""
    from hwkernels.moe_catalog import load_configs
    from xsim.moe.layout import expert_layout
    from xsim.moe.routing import route

    if precision == "bf16":
        s, routing, skew, seed = _shape("bf16"), "zipf", 1.2, 0
    else:
        c = load_configs("moe1-qwen3-30b-fp8-balanced-4096")[0]
        s, routing, skew, seed = c.shape, c.routing, c.skew, c.seed
    return s, expert_layout(s, route(s, routing, skew, seed=seed)), seed


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
@pytest.mark.parametrize("schedule", ["wave", "interleaved"])
def test_fused_kernel_matches_reference_with_either_wait(precision, schedule):
    from hwkernels import moe, moe_reference
    from hwkernels.moe_bench import SETTINGS
    from xsim.moe.schedule import schedule_table

    s, lay, seed = _problem(precision)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    table = schedule_table(s, lay, schedule, n_streams=sms)
    data = moe_reference.make_inputs(s, seed=seed, device="cuda")
    ref = moe_reference.reference(data, lay, s.topk)
    outs = {}
    for poll in (1, 0):
        out = torch.full((s.tokens, s.topk, s.hidden), float("nan"), dtype=torch.bfloat16,
                         device="cuda")
        fused = moe.FusedMoE(s, lay, table, data, out, replace(SETTINGS[precision], poll=poll))
        for _ in range(3):
            out.fill_(float("nan"))
            fused.launch()
            fused.finish()
            ok, err = moe_reference.check(out, ref)
            assert ok, (poll, err)
            assert 500 < fused.run_clock_mhz() <= 2100      # CLK: the launch's own SM clock
        assert fused.l2_full.tolist() == [s.l1_nblocks] * lay.n_mblocks
        outs[poll] = out
    assert torch.equal(outs[0], outs[1])          # the wait changes no value
    assert float(ref.abs().max()) > 0.1


@pytest.mark.parametrize("poll", [1, 0])
def test_missing_dependency_times_out_on_the_gpu(poll):
    from hwkernels import moe, moe_reference
    from hwkernels.moe_bench import SETTINGS
    from xsim.moe.layout import expert_layout
    from xsim.moe.routing import route

    s = _shape("bf16")
    lay = expert_layout(s, route(s, "balanced", seed=4))
    e = int(lay.mblock_expert()[1])
    # stream 0 waits on m-block 1, whose Linear-1 tiles only stream 0 itself would run later
    table = SimpleNamespace(offsets=np.array([0, 3, 4], np.int32),
                            tiles=np.array([(1, e, 1, 0), (0, e, 1, 0), (0, e, 1, 1),
                                            (0, e, 1, 2)], np.int32),
                            l1_nblocks=s.l1_nblocks)
    data = moe_reference.make_inputs(s, seed=4, device="cuda")
    out = torch.zeros(s.tokens, s.topk, s.hidden, dtype=torch.bfloat16, device="cuda")
    kc = replace(SETTINGS["bf16"], poll=poll, max_spins=20_000)
    fused = moe.FusedMoE(s, lay, table, data, out, kc)
    fused.launch()
    with pytest.raises(moe.MoEKernelError, match="tile 0"):
        fused.finish()
    assert fused.l2_full.tolist()[1] <= 1        # stream 0 stopped: its own L1 tiles never ran
