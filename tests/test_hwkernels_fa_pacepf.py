"""The fused-paced kernel with each chunk read from the stage one chunk step early (PF,
fa_qloop._pace_step_pf) on tiny shapes under Triton's CPU interpreter, against torch SDPA on the
receiver side: uniform branch and masked chunk code, chunks spread or one per KV step, Q-loops
long enough for every chunk and too short (the rest at the tile end), both tile orders, ragged
program counts; and the launcher's refusal of PF with the software-pipelined Q-loop."""

import json

import pytest

from interpreter import run_interpreted

CODE = r"""
import json, torch
from hwkernels import fa
CASES = [  # batch, heads, seq_len, head_dim, sp, rank, block_m, block_n, programs
    (2, 4, 64, 64, 2, 1, 16, 16, 3),     # 4 KV steps, 16 tiles on 3 programs
    (1, 8, 128, 64, 4, 2, 16, 16, 5),    # 8 KV steps, rank 2 of 4
]
for (b, h, m, d, sp, rank, bm, bn, progs) in CASES:
    shape = fa.FAShape(batch=b, heads=h, seq_len=m, head_dim=d, sp=sp, rank=rank,
                       block_m=bm, block_n=bn)
    q, k, v = fa.generate_input(shape, seed=3, device="cpu")
    ref = fa.reference(q, k, v)
    bufs = fa.OwnerBuffers.allocate(shape, torch.empty((sp - 1) * shape.slice_elems,
                                                      dtype=torch.bfloat16))
    stage = torch.empty(progs * bm * d, dtype=torch.bfloat16)
    # pace 2: stride > 1 (spread); 8: more chunks than 4 KV steps (the rest at the tile end)
    for pace, spread, order, branch in ((2, True, "remote-first", True),
                                        (8, True, "remote-first", True),
                                        (4, False, "default", True),
                                        (8, True, "default", False),
                                        (2, False, "remote-first", False)):
        fa.poison(bufs.local, bufs.remote)
        fa.launch_fa(q, k, v, shape, fa.MODE_PACED, bufs=bufs, programs=progs, num_warps=1,
                     pace=pace, spread=spread, stage=stage, order=order, branch=branch,
                     emu=1, qreg=True, pf=True)
        ok, err = fa.check_owners(ref, bufs, shape)
        tag = f"m{m}r{rank}:p{pace}{'s' if spread else 'c'}-{order}-{'b' if branch else 'm'}"
        print(json.dumps([tag, bool(ok), float(err)]))
"""


@pytest.fixture(scope="module")
def interpreted():
    return [json.loads(line) for line in run_interpreted(CODE) if line.startswith("[")]


def test_paced_chunks_read_early_match_sdpa(interpreted):
    assert len(interpreted) == 2 * 5
    bad = [(n, err) for n, ok, err in interpreted if not ok]
    assert not bad
    assert max(err for _, _, err in interpreted) < 2e-2


def test_pf_with_swp_is_refused():
    torch = pytest.importorskip("torch")
    from hwkernels import fa

    shape = fa.FAShape(batch=1, heads=2, seq_len=32, head_dim=64, sp=2, block_m=16, block_n=16)
    stage = torch.empty(shape.block_m * shape.head_dim, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match='"pf" .* needs the plain Q-loop'):
        fa.launch_fa(None, None, None, shape, fa.MODE_PACED, programs=1, pace=2, stage=stage,
                     swp=True, pf=True)


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1024, 2048])
def test_paced_chunks_read_early_on_the_gpu_receiver_side(m):
    torch = pytest.importorskip("torch")
    from hwkernels.destination import host_buffer
    from hwkernels.fa import FAShape
    from hwkernels.fa_variants import Case, KernelConfig

    shape = FAShape(batch=2, heads=8, seq_len=m, head_dim=128, sp=4, rank=2)
    host = host_buffer(2 * shape.remote_bytes, torch.device("cuda", 0))
    for pf in (False, True):
        case = Case(shape, KernelConfig(tma=True, pace_pf=pf), host.cuda, 2, 132)
        case.poison("fused-paced")
        for slot in range(case.slots):
            case.enqueue("fused-paced", slot)
        torch.cuda.synchronize()
        ok, err = case.check("fused-paced")
        assert ok, (m, pf, err)
