"""FA-only with the last partial wave split along KV (split-KV for the wave tail).

    plan = split_plan(n_tiles, programs, seq // block_n)    # (n_full, n_split)
    ws = SplitWorkspace.allocate(shape, programs, device)
    launch_fa_split(q, k, v, shape, out, ws, programs=132, tma=True)

The persistent kernel takes work items p, p + P, ...: the first n_full items are whole tiles
(as fa_kernels.fa_fwd_kernel MODE 0); the n_tiles - n_full tiles of the last partial wave are
split into n_split KV ranges each, so the last round runs n_split times as many items, each
1/n_split as long, on the SMs that would otherwise idle (at M = 3K: 192 tiles on 132 SMs,
60 tiles x 2 halves). A split writes its normalized partial O_s (fp32) and row log-sum-exp
lse_s = m_s + log2(l_s) (base 2) to the workspace, then every thread fences (fence.acq_rel.gpu),
a CTA barrier, and one acq_rel atomic increments the tile's counter; the split that arrives
last merges: O = sum_s 2^(lse_s - L) O_s / sum_s 2^(lse_s - L), L = max_s lse_s (its loads
bypass L1), stores the tile and resets the counter for the next launch. No program waits on
another, so any order of programs (the interpreter's too) completes.

FA-only only: the fused variants keep the unsplit schedule (their tile's own CTA stores the
whole tile at its boundary; a merged tile would be stored by whichever split ends last).
torch is imported lazily; triton at import (like fa_kernels). Measured at M = 3K (docs/fa-a2a.md):
114.7 -> 86.4 us, the 1.5-round ideal; off in the sweep (the fused kernels are not split).
"""

from dataclasses import dataclass

import triton
import triton.language as tl

from .fa_kernels import _tile_coords
from .fa_qloop import _qloop_raw


def split_plan(n_tiles: int, programs: int, n_kv: int, min_steps: int = 2) -> tuple[int, int]:
    """(n_full, n_split): the tiles run whole, and how many KV ranges each remaining tile is
    split into (1: no split). Split only when every remaining tile can be split >= 2 ways
    within one round of `programs` and each range keeps >= min_steps KV steps."""
    if n_tiles < 1 or programs < 1 or n_kv < 1:
        raise ValueError('"n_tiles", "programs" and "n_kv" must be >= 1.')
    n_full = (n_tiles // programs) * programs
    rest = n_tiles - n_full
    if rest == 0:
        return n_tiles, 1
    n_split = min(programs // rest, n_kv // min_steps)
    return (n_full, n_split) if n_split >= 2 else (n_tiles, 1)


def kv_range(s: int, n_split: int, n_kv: int) -> tuple[int, int]:
    """KV steps [lo, hi) of split s (the kernel's arithmetic)."""
    return s * n_kv // n_split, (s + 1) * n_kv // n_split


@dataclass(frozen=True)
class SplitWorkspace:
    """fp32 partials [programs, b_m, d], their lse [programs, b_m], int32 counters [programs]
    (zero; each merge resets its own)."""

    part: object
    lse: object
    count: object

    @staticmethod
    def allocate(shape, programs: int, device):
        import torch

        n = max(1, programs)
        return SplitWorkspace(
            torch.empty((n, shape.block_m, shape.head_dim), dtype=torch.float32, device=device),
            torch.empty((n, shape.block_m), dtype=torch.float32, device=device),
            torch.zeros(n, dtype=torch.int32, device=device))


@triton.jit
def _fence_acq_rel_gpu():
    return tl.inline_asm_elementwise("fence.acq_rel.gpu;\n\tmov.u32 $0, 0;", "=r", [],
                                     dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _merge(part_ptr, lse_ptr, first, n_split, offs_m, offs_d, BLOCK_M: tl.constexpr,
           D: tl.constexpr):
    top = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    for s in range(0, n_split):
        top = tl.maximum(top, tl.load(lse_ptr + (first + s) * BLOCK_M + offs_m,
                                      cache_modifier=".cg"))
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    wsum = tl.zeros([BLOCK_M], dtype=tl.float32)
    for s in range(0, n_split):
        w = tl.math.exp2(tl.load(lse_ptr + (first + s) * BLOCK_M + offs_m,
                                 cache_modifier=".cg") - top)
        o = tl.load(part_ptr + ((first + s) * BLOCK_M + offs_m)[:, None].to(tl.int64) * D
                    + offs_d[None, :], cache_modifier=".cg")
        acc += w[:, None] * o
        wsum += w
    return acc / wsum[:, None]


@triton.jit
def fa_split_kernel(q_ptr, k_ptr, v_ptr, out_ptr, part_ptr, lse_ptr, count_ptr, qk_scale,
                    n_tiles, programs, hl, seq, n_full, n_split,
                    D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    UPCAST: tl.constexpr, TMA: tl.constexpr, EMU: tl.constexpr,
                    EARLY: tl.constexpr = False, LSUM: tl.constexpr = False):
    pid = tl.program_id(0)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    desc_k = k_ptr
    desc_v = v_ptr
    if TMA:
        desc_k = tl.make_tensor_descriptor(k_ptr, shape=[n_tiles * BLOCK_M, D], strides=[D, 1],
                                           block_shape=[BLOCK_N, D])
        desc_v = tl.make_tensor_descriptor(v_ptr, shape=[n_tiles * BLOCK_M, D], strides=[D, 1],
                                           block_shape=[BLOCK_N, D])
    n_rest = tl.maximum(n_tiles - n_full, 1)
    n_kv = seq // BLOCK_N
    for item in tl.range(pid, n_full + (n_tiles - n_full) * n_split, programs):
        split = item >= n_full
        j = tl.maximum(item - n_full, 0)
        r = j % n_rest
        s = j // n_rest
        tile = tl.where(split, n_full + r, item)
        kv_lo = tl.where(split, s * n_kv // n_split, 0) * BLOCK_N
        kv_len = tl.where(split, (s + 1) * n_kv // n_split * BLOCK_N - kv_lo, seq)
        b, h, m0 = _tile_coords(tile, hl, seq, BLOCK_M)
        kv_row0 = (b * hl + h) * seq
        kv_base = kv_row0.to(tl.int64) * D
        q_rows = kv_base + (m0 + offs_m)[:, None].to(tl.int64) * D + offs_d[None, :]
        q = tl.load(q_ptr + q_rows)
        if UPCAST:
            q = q.to(tl.float32)
        acc, m_i, l_i = _qloop_raw(q, kv_base + kv_lo.to(tl.int64) * D, k_ptr, v_ptr, desc_k,
                                   desc_v, kv_row0 + kv_lo, kv_len, offs_n, offs_d, qk_scale,
                                   out_ptr, out_ptr, kv_base, 0, 1, D, offs_m, BLOCK_M,
                                   BLOCK_N, D, UPCAST, TMA, 0, BLOCK_M, True, EMU, EARLY,
                                   LSUM)
        o_tile = acc / l_i[:, None]
        if split:
            slot = r * n_split + s
            tl.store(part_ptr + (slot * BLOCK_M + offs_m)[:, None].to(tl.int64) * D
                     + offs_d[None, :], o_tile)
            tl.store(lse_ptr + slot * BLOCK_M + offs_m, m_i + tl.math.log2(l_i))
            if not UPCAST:
                _fence_acq_rel_gpu()
            tl.debug_barrier()
            arrived = tl.atomic_add(count_ptr + r, 1, sem="acq_rel", scope="gpu")
            if arrived == n_split - 1:
                o_tile = _merge(part_ptr, lse_ptr, r * n_split, n_split, offs_m, offs_d,
                                BLOCK_M, D)
                tl.store(out_ptr + q_rows, o_tile.to(out_ptr.dtype.element_ty))
                tl.atomic_xchg(count_ptr + r, 0, sem="relaxed", scope="gpu")
        else:
            tl.store(out_ptr + q_rows, o_tile.to(out_ptr.dtype.element_ty))


def launch_fa_split(q, k, v, shape, out, ws: SplitWorkspace, programs: int = 132,
                    num_warps: int = 8, num_stages: int = 3, tma: bool = False, emu: int = 0,
                    early: bool = False, lsum: bool = False, qreg: bool = False):
    """Enqueue FA-only with the wave tail split (no sync); without a split (split_plan gives 1)
    the shipped fa_fwd_kernel MODE 0 (with `qreg`; the split kernel itself has no QREG). Returns Triton's handle of the compiled kernel."""
    import math

    from . import fa
    from .tma import set_tma_allocator

    n_full, n_split = split_plan(shape.n_tiles, programs, shape.seq_len // shape.block_n)
    if n_split == 1:
        return fa.launch_fa(q, k, v, shape, fa.MODE_LOCAL, out=out, programs=programs,
                            num_warps=num_warps, num_stages=num_stages, tma=tma, emu=emu,
                            early=early, lsum=lsum, qreg=qreg)
    grid = min(programs, n_full + (shape.n_tiles - n_full) * n_split)
    if ws.count.numel() < grid or ws.part.shape[1:] != (shape.block_m, shape.head_dim):
        raise ValueError('"ws" is smaller than programs x block_m x head_dim.')
    if emu not in fa.EMUS:
        raise ValueError(f'"emu" must be one of {fa.EMUS}, got {emu!r}.')
    upcast = fa._interpreter_compat()
    if tma:
        set_tma_allocator(q.device)
    qk_scale = 1.0 / math.sqrt(shape.head_dim) * 1.4426950408889634
    return fa_split_kernel[(grid,)](
        q, k, v, out, ws.part, ws.lse, ws.count, qk_scale, shape.n_tiles, grid,
        shape.heads_local, shape.seq_len, n_full, n_split, D=shape.head_dim,
        BLOCK_M=shape.block_m, BLOCK_N=shape.block_n, UPCAST=upcast, TMA=tma, EMU=int(emu),
        EARLY=bool(early), LSUM=bool(lsum),
        num_warps=num_warps, num_stages=num_stages)
