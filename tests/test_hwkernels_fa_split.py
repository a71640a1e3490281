"""FA-only with the last partial wave split along KV (hwkernels/fa_split.py): the plan, the KV
ranges, and the kernel under Triton's CPU interpreter on tiny shapes against torch SDPA
(2- and 3-way splits of uneven length, tiles fewer than programs, the counters reset; the second
launch with the rescale first and the row sums as P @ ones)."""

import json

import pytest

from interpreter import run_interpreted


CODE = r"""
import json, torch
from hwkernels import fa, fa_split
CASES = [  # batch, heads, seq_len, head_dim, sp, block_m, block_n, programs, tma
    (1, 8, 64, 64, 4, 16, 16, 6, False),      # 8 tiles: 6 whole, 2 split 2 ways
    (1, 4, 96, 64, 2, 16, 16, 9, False),      # 12 tiles: 9 whole, 3 split 3 ways
    (1, 2, 80, 64, 1, 16, 16, 30, False),     # 10 tiles < 30 programs: 5 KV steps as 2 + 3
    (1, 2, 128, 64, 2, 32, 16, 8, True),      # TMA, 4 tiles on 8 programs, split 2 ways
]
for (b, h, m, d, sp, bm, bn, progs, tma) in CASES:
    shape = fa.FAShape(batch=b, heads=h, seq_len=m, head_dim=d, sp=sp, block_m=bm, block_n=bn)
    q, k, v = fa.generate_input(shape, seed=2, device="cpu")
    ref = fa.reference(q, k, v)
    out = torch.empty(shape.qkv_shape, dtype=torch.bfloat16)
    ws = fa_split.SplitWorkspace.allocate(shape, progs, "cpu")
    plan = fa_split.split_plan(shape.n_tiles, progs, m // bn)
    for rep in range(2):             # the second launch reuses the counters the merges reset
        fa.poison(out)
        fa_split.launch_fa_split(q, k, v, shape, out, ws, programs=progs, num_warps=1, tma=tma,
                                 early=bool(rep), lsum=bool(rep))
        ok, err = fa.check_local(out, ref)
        print(json.dumps({"case": [b, h, m, bm, bn, progs], "plan": list(plan), "rep": rep,
                          "ok": ok, "err": err, "count": int(ws.count.abs().sum())}))
    # a merge that never fires (counters off by one) leaves its tiles unwritten: the check sees it
    ws.count.fill_(-1)
    fa.poison(out)
    fa_split.launch_fa_split(q, k, v, shape, out, ws, programs=progs, num_warps=1, tma=tma)
    print(json.dumps({"case": [b, h, m, bm, bn, progs], "plan": list(plan), "rep": "broken",
                      "ok": fa.check_local(out, ref)[0], "err": 0.0, "count": 0}))
"""


@pytest.fixture(scope="module")
def interpreted():
    return [json.loads(line) for line in run_interpreted(CODE) if line.startswith("{")]


def test_split_kernel_matches_sdpa_and_resets_its_counters(interpreted):
    runs = [r for r in interpreted if r["rep"] != "broken"]
    assert len(runs) == 8
    assert [tuple(r["plan"]) for r in runs[::2]] == [(6, 2), (9, 3), (0, 2), (0, 2)]
    for r in runs:
        assert r["ok"] and r["err"] < 2e-2, r
        assert r["count"] == 0, r


def test_a_merge_that_never_fires_is_caught(interpreted):
    broken = [r for r in interpreted if r["rep"] == "broken"]
    split = [r for r in broken if r["plan"][1] > 1]
    assert split and not any(r["ok"] for r in split)


def test_split_plan():
    from hwkernels.fa_split import split_plan

    assert split_plan(192, 132, 24) == (132, 2)      # M = 3K: 60 tiles x 2 halves
    assert split_plan(256, 132, 8) == (256, 1)       # 124 left: no second split fits
    assert split_plan(264, 132, 8) == (264, 1)       # whole waves
    assert split_plan(4096, 132, 512) == (4092, 33)  # 4 tiles over the idle SMs
    assert split_plan(4, 132, 8) == (0, 4)           # at least 2 KV steps per range
    assert split_plan(3, 5, 6) == (3, 1)
    with pytest.raises(ValueError, match='"n_tiles", "programs" and "n_kv" must be >= 1.'):
        split_plan(0, 132, 8)


def test_kv_ranges_cover_the_loop_once():
    from hwkernels.fa_split import kv_range

    for n_kv in (2, 5, 24, 512):
        for n_split in range(1, min(n_kv, 33) + 1):
            steps = [s for j in range(n_split) for s in range(*kv_range(j, n_split, n_kv))]
            assert steps == list(range(n_kv))
            assert min(hi - lo for lo, hi in (kv_range(j, n_split, n_kv)
                                               for j in range(n_split))) >= n_kv // n_split
