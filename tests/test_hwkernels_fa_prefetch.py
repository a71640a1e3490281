"""The next-tile Q prefetch options of fa_fwd_kernel (QREG: the next tile's Q loaded during the
epilogue and carried across the persistent loop; QPF: L2 prefetches, a no-op under the
interpreter) on tiny shapes under Triton's CPU interpreter, every kernel variant, against
torch SDPA on the receiver side; and the launchers' errors."""

import json

import pytest

from interpreter import run_interpreted

CODE = r"""
import json, torch
from hwkernels import fa
CASES = [  # batch, heads, seq_len, head_dim, sp, rank, block_m, block_n, programs
    (2, 4, 64, 64, 2, 1, 16, 16, 3),     # 16 tiles on 3 programs: 5-6 tiles each, a ragged end
    (1, 8, 64, 64, 4, 2, 16, 16, 3),     # 8 tiles on 3 programs, rank 2 of 4
]
for (b, h, m, d, sp, rank, bm, bn, progs) in CASES:
    shape = fa.FAShape(batch=b, heads=h, seq_len=m, head_dim=d, sp=sp, rank=rank,
                       block_m=bm, block_n=bn)
    q, k, v = fa.generate_input(shape, seed=2, device="cpu")
    ref = fa.reference(q, k, v)
    out = torch.empty(shape.qkv_shape, dtype=torch.bfloat16)
    bufs = fa.OwnerBuffers.allocate(shape, torch.empty((sp - 1) * shape.slice_elems,
                                                      dtype=torch.bfloat16))
    flags = torch.zeros(progs, dtype=torch.int32)
    stage = torch.empty(progs * bm * d, dtype=torch.bfloat16)
    for qpf, qreg in ((0, True), (2, True), (1, False)):
        kw = dict(programs=progs, num_warps=1, qpf=qpf, qreg=qreg)
        tag = f"b{b}h{h}m{m}:q{qpf}r{int(qreg)}"
        fa.poison(out)
        fa.launch_fa(q, k, v, shape, fa.MODE_LOCAL, out=out, **kw)
        print(json.dumps([f"{tag}:fa-only", *map(float, fa.check_local(out, ref))]))
        for name, mode, extra in (("fused", fa.MODE_FUSED, {}), ("cc-atomic", fa.MODE_CC, {}),
                                  ("fused-paced", fa.MODE_PACED,
                                   dict(pace=2, stage=stage, order="remote-first")),
                                  ("fused-paced-default", fa.MODE_PACED,
                                   dict(pace=2, stage=stage, order="default"))):
            fa.poison(bufs.local, bufs.remote)
            fa.launch_fa(q, k, v, shape, mode, bufs=bufs, flags=flags, **extra, **kw)
            print(json.dumps([f"{tag}:{name}", *map(float, fa.check_owners(ref, bufs, shape))]))
"""


@pytest.fixture(scope="module")
def interpreted():
    return [json.loads(line) for line in run_interpreted(CODE) if line.startswith("[")]


def test_prefetch_options_match_sdpa_in_every_variant(interpreted):
    assert len(interpreted) == 2 * 3 * 5
    bad = [(n, err) for n, ok, err in interpreted if not ok]
    assert not bad
    assert max(err for _, _, err in interpreted) < 2e-2


def test_bad_qpf_is_refused():
    pytest.importorskip("torch")
    from hwkernels import fa
    from hwkernels.fa_variants import KernelConfig

    with pytest.raises(ValueError, match='"qpf" must be one of'):
        KernelConfig(qpf=3)
    shape = fa.FAShape(batch=1, heads=2, seq_len=32, head_dim=64, sp=2, block_m=16, block_n=16)
    with pytest.raises(ValueError, match='"qpf" must be one of'):
        fa.launch_fa(None, None, None, shape, fa.MODE_LOCAL, qpf=5)
