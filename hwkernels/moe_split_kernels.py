"""Triton device side of the K-split Linear-1 tiles (host rule and protocol: moe_split.py)."""

import triton
import triton.language as tl


@triton.jit
def split_merge(acc_g, acc_u, ws_ptr, cnt_ptr, tile, part, BM: tl.constexpr,
                BN: tl.constexpr, SPLIT: tl.constexpr):
    """(last, gate sum, up sum): store this part's partials, count the arrival; the last
    part to arrive gets the sums over every part, the others their own partials back."""
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    base = ws_ptr + tile.to(tl.int64) * (SPLIT * 2 * BM * BN)
    mine = base + part * (2 * BM * BN)
    tl.store(mine + offs, acc_g)
    tl.store(mine + BM * BN + offs, acc_u)
    tl.debug_barrier()
    arrived = tl.atomic_add(cnt_ptr + tile, 1, sem="acq_rel", scope="gpu")
    tl.debug_barrier()
    last = arrived == SPLIT - 1
    if last:
        acc_g = tl.zeros((BM, BN), dtype=tl.float32)
        acc_u = tl.zeros((BM, BN), dtype=tl.float32)
        for p in tl.static_range(SPLIT):
            acc_g += tl.load(base + p * (2 * BM * BN) + offs)
            acc_u += tl.load(base + p * (2 * BM * BN) + BM * BN + offs)
    return last, acc_g, acc_u
