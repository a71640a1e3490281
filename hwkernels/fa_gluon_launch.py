"""Launchers of the Gluon attention forward (fa_gluon.gluon_fa_kernel).

    out, _ = gluon_fa(q, k, v)          # FA-only as explored (3 stages, 4 B stores)
    launch_gluon_fa(q, k, v, shape, mode, out=out, bufs=bufs, stamps=stamps, stage=stage)
                                        # fa.launch_fa's contract: FA-only, fused, cc, fused-paced
"""

from .fa_gluon import BM, BN, D, LOG2E, _layouts, gluon_fa_kernel


def _check(q, k, v):
    import torch

    b, h, m, d = q.shape
    if d != D or m % BM or q.dtype != torch.bfloat16 or not (q.is_contiguous() and k.is_contiguous()
                                                           and v.is_contiguous()):
        raise ValueError(f"gluon_fa: needs contiguous bf16 [b, h, M, 128], M % 128 == 0; got "
                         f"{tuple(q.shape)} {q.dtype}")


def _enqueue(q, k, v, dst, remote, delta, stamps, rank, hl, sp, programs, stages, overlap,
             pingpong, mode, store16=False, stage=None, order=0, pstride=1, clock=None,
             stagger_ns=0):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    b, h, m, d = q.shape
    lq, lkv = _layouts()
    q2, k2, v2 = (x.view(b * h * m, d) for x in (q, k, v))
    qd = TensorDescriptor.from_tensor(q2, [64, 128], lq)
    kd = TensorDescriptor.from_tensor(k2, [128, 128], lkv)
    vd = TensorDescriptor.from_tensor(v2, [128, 128], lkv)
    n_tiles = b * h * (m // BM)
    grid = (max(1, min(programs, n_tiles)),)
    return gluon_fa_kernel[grid](
        qd, kd, vd, dst, remote, delta if delta is not None else dst,
        stamps if stamps is not None else dst, stage if stage is not None else dst,
        clock if clock is not None else dst,
        LOG2E / d ** 0.5, m, n_tiles, stages, overlap, pingpong, MODE=mode,
        INSTR=stamps is not None, CLK=clock is not None, STAGGER_NS=stagger_ns, DELTA=delta is not None, STORE16=store16, RANK=rank, HL=hl,
        SP=sp, ORDER=order, PSTRIDE=pstride, num_warps=4, maxnreg=168)


def gluon_fa(q, k, v, out=None, stages=3, overlap=2, pingpong=0, programs=None):
    """FA-only forward on q, k, v [batch, heads, M, d = 128] bf16 contiguous (M a multiple of 128);
    returns (out [batch, heads, M, d] bf16, not causal, scale 1/sqrt(d); Triton's handle of the
    compiled kernel). programs: the persistent grid (default the SM count; n_tiles: one tile
    per program)."""
    import torch

    _check(q, k, v)
    out = torch.empty_like(q) if out is None else out
    if programs is None:
        programs = torch.cuda.get_device_properties(q.device).multi_processor_count
    return out, _enqueue(q, k, v, out, out, None, None, 0, 1, 1, programs, stages, overlap,
                         pingpong, 0)


PACE = 8                    # fused-paced: row chunks per tile (8 rows of each warpgroup's half)


def launch_gluon_fa(q, k, v, shape, mode: int, out=None, bufs=None, stamps=None,
                    programs: int = 132, stages: int = 2, overlap: int = 2, pingpong: int = 0,
                    stage=None, order: str = "remote-first", clock=None, stagger_ns: int = 0):
    """fa.launch_fa's contract on this mainloop (no sync): mode 0 (FA-only) writes `out`
    [batch, HL, M, 128]; 1 (fused), 2 (completion-coupled, fence.sc.sys by every thread after
    its stores, no CTA barrier: each warpgroup goes on once its own stores are visible) and 3
    (fused-paced, PACE chunks spread over the next Q-loop, fa.pace_stride; `stage` >= programs
    x 128 x 128 bf16 in HBM; tiles in `order`, fa.ORDERS) write `bufs` (fa.OwnerBuffers);
    stamps (int64 [n_tiles, 6]) are consumer 0's; `clock` (int64 [2], CLK) gets every program's
    consumer-0 SM cycles and nanoseconds added (the launch's own mean clock: their ratio);
    stagger_ns: program p's consumers begin stagger_ns * p / programs late (%globaltimer; its
    producer loads the first stages meanwhile), staggering the programs' tile boundaries. b_m = b_n = 128, d = 128, modes 0-2 in
    fa_layout.tiles order, 16 B stores (STORE16: 2 stages leave it the shared memory). Returns
    Triton's handle of the compiled kernel."""
    from . import fa

    if mode not in (0, 1, 2, 3):
        raise ValueError(f'the Gluon mainloop runs modes 0-3 (FA-only, fused, cc, paced), got {mode!r}.')
    if (shape.head_dim, shape.block_m, shape.block_n) != (D, BM, BN):
        raise ValueError(f'the Gluon mainloop needs head_dim = block_m = block_n = 128, got '
                         f'{(shape.head_dim, shape.block_m, shape.block_n)}.')
    _check(q, k, v)
    dst, remote, delta = fa.destinations(mode, out, bufs)
    paced = {}
    if mode == 3:
        if stage is None or stage.numel() < min(programs, shape.n_tiles) * BM * D:
            raise ValueError('the paced variant needs "stage" (>= programs * 128 * 128 elements).')
        paced = dict(stage=stage, order=fa.ORDERS[order], pstride=fa.pace_stride(shape, PACE, True))
    return _enqueue(q, k, v, dst, remote, delta, stamps, shape.rank, shape.heads_local, shape.sp,
                    programs, stages, overlap, pingpong, mode, store16=True, clock=clock,
                    stagger_ns=int(stagger_ns), **paced)
