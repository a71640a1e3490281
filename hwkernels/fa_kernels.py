"""Triton kernels of the FA + post-attention A2A experiment (kernels only; see fa.py).

Shapes (all contiguous, bf16 unless noted; layout math in fa_layout.py):
  q, k, v   [batch, HL, M, D]      rank r's heads after the pre-attention A2A (HL = H / N)
  out       MODE 0: [batch, HL, M, D] local output (FA-only, and the A2A kernels' source)
            MODE 1, 2: owner r's buffer [batch, M/N, H, D] in local HBM
  remote    [N-1, batch, M/N, H, D] the other owners' buffers (host memory; slot order of
            fa_layout.remote_slot), unused in MODE 0
  delta     int64 [N] (DELTA only, N ranks over symmetric memory): owner o's buffer
            [batch, M/N, H, D] starts delta[o] elements from `remote` (the owners' buffers are
            separate allocations, not N-1 slots of one); without DELTA slot s is at
            s * slice_elems
  stamps    int64 [n_tiles, 6] (INSTR only): %globaltimer ns at tile start, at Q-loop end,
            at store end, then %clock64 at the same three points
  flags     int32 [programs] (MODE 2, FENCE 2 only): the per-tile release target
  stage     [programs, b_m, D] (MODE 3 only): each program's staged output tile

fa_fwd_kernel is persistent: program p takes tiles p, p + programs, ... (grid = SM count or
fewer); each tile is b_m query rows of one (b, h), a full Q-loop over all M/b_n K/V tiles with
the online softmax (scores in base 2), then the epilogue:
  MODE 0  store the tile into `out` (FA-only);
  MODE 1  fused: store the tile to its owner (local HBM when owner == rank, else the remote
          buffer) and move straight on to the next tile: no communication warp or program;
  MODE 2  completion-coupled: MODE 1, then every thread waits until its stores are visible at
          system scope before the next tile starts: FENCE 1 `fence.sc.sys` (inline asm),
          FENCE 2 a CTA barrier then an atomic add with sem=release, scope=sys;
  MODE 3  fused-paced: a tile owned by the rank is stored to HBM at once; a remote tile is
          written to the program's staging slot (`stage`, [programs, b_m, D] in HBM) and its
          host stores are spread over the program's next tile: PACE row chunks of b_m / PACE
          rows, chunk c stored after KV step c * pace_stride of the next Q-loop (the chunks the
          Q-loop is too short for, and the program's last tile, are stored at the tile end);
          BRANCH: the chunk code under a uniform `if` (else masked off on the other steps);
          PF: each chunk read from the stage into registers one chunk step before its stores
          (fa_qloop._pace_step_pf; the plain Q-loop only).
ORDER 0: tile t in fa_layout.tiles order; ORDER 1: remote-first (fa_layout.remote_first_coords:
the tiles of the other owners first, the rank's own tiles last, so the last wave stores to HBM).
FLATTEN: the persistent loop as tl.range(flatten=True) (Triton may fuse it with the Q-loop);
WS: the persistent loop as tl.range(warp_specialize=True) (Triton's Hopper warp
specialization, as its persistent-matmul tutorial does it: with FLATTEN off).
SWP: the Q-loop software-pipelined by one KV step (fa_qloop._qloop_swp; measured slower, off
by default; the Q-loops and their chunk stores live in fa_qloop.py).
EMU: the softmax's exp2 with EMU of every 8 elements on the FMA pipe (fa_exp2; 0: all MUFU;
the non-SWP Q-loop only; the launchers' KernelConfig ships 1). LSUM: the row sums as P @ ones
on the tensor cores (fa_qloop._qloop_raw; measured slower, off by default). EARLY: the softmax's alpha and acc rescale first
(fa_qloop._softmax_step).
QPF (prefetch, sm_90 only, skipped under UPCAST): at each tile start one thread issues a bulk L2
prefetch (cp.async.bulk.prefetch.L2) of the program's next tile's Q (32 KB contiguous), QPF 2
also of that tile's first K and V tiles; no registers held. QREG: the next tile's Q loaded into
registers right after the Q-loop (in flight during the epilogue) and carried across the
persistent loop, so a tile starts with its Q at hand (the first tile's before the loop).
TMA: K and V tiles through tensor descriptors (tl.make_tensor_descriptor; Hopper TMA) instead of
pointer loads; the launcher sets triton's allocator for the descriptors' scratch.
UPCAST (the launcher sets it under TRITON_INTERPRET=1 only): the interpreter keeps bf16 as raw
uint16 and its tl.dot multiplies those integers, so q, k, v are cast to float32 after the load.
Bytes per tile: reads (1 + 2 M/b_n * b_n/b_m) b_m D * 2, writes b_m * D * 2 (32 KB at
b_m = D = 128).

a2a_store_kernel: the separate A2A of the Serial and A2A-only variants. Persistent over the
same tiles in the same order: reads one tile of `out` (MODE 0 layout) and stores it exactly as
MODE 1 does.
"""

import triton
import triton.language as tl

from .fa_qloop import _qloop, _qloop_swp, _store_chunk


@triton.jit
def _globaltimer_ns():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64,
                                     is_pure=False, pack=1)


@triton.jit
def _clock64():
    return tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64,
                                     is_pure=False, pack=1)


@triton.jit
def _fence_sc_sys():
    return tl.inline_asm_elementwise("fence.sc.sys;\n\tmov.u32 $0, 0;", "=r", [],
                                     dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _prefetch_l2(ptr, nbytes):
    # One bulk L2 prefetch of nbytes contiguous bytes at ptr (16-aligned, a multiple of 16),
    # issued by thread 0 (cp.async.bulk.prefetch.L2, sm_90): no registers held, no wait.
    return tl.inline_asm_elementwise(
        "{\n\t.reg .pred p;\n\t.reg .b32 t;\n\tmov.u32 t, %tid.x;\n\tsetp.eq.u32 p, t, 0;\n\t"
        "@p cp.async.bulk.prefetch.L2.global [$1], $2;\n\tmov.u32 $0, 0;\n\t}",
        "=r,l,r", [ptr.to(tl.int64, bitcast=True), nbytes], dtype=tl.int32, is_pure=False,
        pack=1)


@triton.jit
def _next_rows(tile, programs, n_tiles, hl, seq, sp, rank, BLOCK_M: tl.constexpr,
               D: tl.constexpr, ORDER: tl.constexpr):
    # The program's next tile (its last tile again at the end: in bounds, never used):
    # (element offset of its first Q row, of its (b, h)'s first K/V row).
    nxt = tl.minimum(tile + programs, n_tiles - 1)
    b, h, m0 = _ordered_coords(nxt, hl, seq, sp, rank, n_tiles, BLOCK_M, ORDER)
    kv_base = ((b * hl + h) * seq).to(tl.int64) * D
    return kv_base + m0.to(tl.int64) * D, kv_base


@triton.jit
def _stamp(stamps_ptr, tile, slot):
    tl.store(stamps_ptr + tile.to(tl.int64) * 6 + slot, _globaltimer_ns())
    tl.store(stamps_ptr + tile.to(tl.int64) * 6 + 3 + slot, _clock64())


@triton.jit
def _tile_coords(tile, hl, seq, BLOCK_M: tl.constexpr):
    m_blocks = seq // BLOCK_M
    bh = tile // m_blocks
    m0 = (tile % m_blocks) * BLOCK_M
    return bh // hl, bh % hl, m0


@triton.jit
def _ordered_coords(i, hl, seq, sp, rank, n_tiles, BLOCK_M: tl.constexpr, ORDER: tl.constexpr):
    # ORDER 1 is fa_layout.remote_first_coords: remote tiles in (b, h, m) order, then local.
    if ORDER == 0:
        b, h, m0 = _tile_coords(i, hl, seq, BLOCK_M)
    else:
        m_blocks = seq // BLOCK_M
        per_owner = m_blocks // sp
        n_remote = n_tiles - n_tiles // sp
        if i < n_remote:
            bh = i // (m_blocks - per_owner)
            j = i % (m_blocks - per_owner)
            mb = j + (j >= rank * per_owner).to(tl.int32) * per_owner
        else:
            bh = (i - n_remote) // per_owner
            mb = rank * per_owner + (i - n_remote) % per_owner
        b, h, m0 = bh // hl, bh % hl, mb * BLOCK_M
    return b, h, m0


@triton.jit
def _owner_dest(b, h, m0, rank, hl, seq, sp, slice_elems, delta_ptr, D: tl.constexpr,
                DELTA: tl.constexpr):
    # Owner o holds [batch, M/N, H, D]: row m0+i of local head h at
    # ((b*M/N + m0 - o*M/N) * H + rank*HL + h) * D + i*H*D (fa_layout.dest_offset).
    # Returns (local, offset): offset into `out` if local, else into `remote` (slot included;
    # DELTA: owner o's buffer at delta[o]).
    tpo = seq // sp
    heads = hl * sp
    o = m0 // tpo
    row0 = (b * tpo + m0 - o * tpo).to(tl.int64)
    base = (row0 * heads + rank * hl + h) * D
    local = o == rank
    if DELTA:
        off = tl.where(local, base, tl.load(delta_ptr + o) + base)
    else:
        slot = o - (o > rank).to(tl.int32)
        off = tl.where(local, base, slot.to(tl.int64) * slice_elems + base)
    return local, off


@triton.jit
def _store_to_owner(tile_val, out_ptr, remote_ptr, b, h, m0, rank, offs_m, offs_d,
                    hl, seq, sp, slice_elems, delta_ptr, D: tl.constexpr, DELTA: tl.constexpr):
    local, off = _owner_dest(b, h, m0, rank, hl, seq, sp, slice_elems, delta_ptr, D, DELTA)
    rows = offs_m[:, None].to(tl.int64) * (hl * sp * D) + offs_d[None, :]
    if local:
        tl.store(out_ptr + off + rows, tile_val)
    else:
        tl.store(remote_ptr + off + rows, tile_val)


@triton.jit
def fa_fwd_kernel(q_ptr, k_ptr, v_ptr, out_ptr, remote_ptr, stamps_ptr, flags_ptr, stage_ptr,
                  qk_scale, n_tiles, programs, rank, hl, seq, sp, slice_elems, pace_stride,
                  delta_ptr,
                  D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  MODE: tl.constexpr, FENCE: tl.constexpr, INSTR: tl.constexpr,
                  UPCAST: tl.constexpr, TMA: tl.constexpr, PACE: tl.constexpr,
                  CHUNK: tl.constexpr, ORDER: tl.constexpr, FLATTEN: tl.constexpr,
                  WS: tl.constexpr, BRANCH: tl.constexpr, DELTA: tl.constexpr = False,
                  SWP: tl.constexpr = False, EMU: tl.constexpr = 0,
                  EARLY: tl.constexpr = False, LSUM: tl.constexpr = False,
                  QPF: tl.constexpr = 0, QREG: tl.constexpr = False,
                  PF: tl.constexpr = False):
    pid = tl.program_id(0)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    offs_c = tl.arange(0, CHUNK)
    row_stride = hl * sp * D
    my_stage = stage_ptr + pid.to(tl.int64) * (BLOCK_M * D)
    pend = pid * 0                      # MODE 3: the stage holds a remote tile not yet stored
    pend_off = (pid * 0).to(tl.int64)   # ... and its offset in `remote`
    desc_k = k_ptr
    desc_v = v_ptr
    if TMA:
        rows_total = n_tiles * BLOCK_M
        desc_k = tl.make_tensor_descriptor(k_ptr, shape=[rows_total, D], strides=[D, 1],
                                           block_shape=[BLOCK_N, D])
        desc_v = tl.make_tensor_descriptor(v_ptr, shape=[rows_total, D], strides=[D, 1],
                                           block_shape=[BLOCK_N, D])
    q_tile = offs_m[:, None].to(tl.int64) * D + offs_d[None, :]
    if QREG:   # the first tile's Q; each tile then loads the next one's (below)
        q_next, _ = _next_rows(pid - programs, programs, n_tiles, hl, seq, sp, rank, BLOCK_M,
                               D, ORDER)
        q = tl.load(q_ptr + q_next + q_tile)
        if UPCAST:
            q = q.to(tl.float32)
    for tile in tl.range(pid, n_tiles, programs, flatten=FLATTEN, warp_specialize=WS):
        if INSTR:
            _stamp(stamps_ptr, tile, 0)
        b, h, m0 = _ordered_coords(tile, hl, seq, sp, rank, n_tiles, BLOCK_M, ORDER)
        kv_row0 = (b * hl + h) * seq
        kv_base = kv_row0.to(tl.int64) * D
        q_rows = kv_base + (m0 + offs_m)[:, None].to(tl.int64) * D + offs_d[None, :]
        if not QREG:
            q = tl.load(q_ptr + q_rows)
            if UPCAST:
                q = q.to(tl.float32)
        if QPF > 0 and not UPCAST:   # the next tile's Q (QPF 2: and its first K, V) into L2
            q_next, kv_next = _next_rows(tile, programs, n_tiles, hl, seq, sp, rank, BLOCK_M,
                                         D, ORDER)
            _prefetch_l2(q_ptr + q_next, BLOCK_M * D * 2)
            if QPF == 2:
                _prefetch_l2(k_ptr + kv_next, BLOCK_N * D * 2)
                _prefetch_l2(v_ptr + kv_next, BLOCK_N * D * 2)
        if SWP:
            o_tile = _qloop_swp(q, kv_base, k_ptr, v_ptr, desc_k, desc_v, kv_row0, seq, offs_n,
                                offs_d, qk_scale, my_stage, remote_ptr, pend_off, pend,
                                pace_stride, row_stride, offs_c, BLOCK_M, BLOCK_N, D, UPCAST,
                                TMA, PACE, CHUNK, BRANCH)
        else:
            o_tile = _qloop(q, kv_base, k_ptr, v_ptr, desc_k, desc_v, kv_row0, seq, offs_n,
                            offs_d, qk_scale, my_stage, remote_ptr, pend_off, pend, pace_stride,
                            row_stride, offs_c, BLOCK_M, BLOCK_N, D, UPCAST, TMA, PACE, CHUNK,
                            BRANCH, EMU, EARLY, LSUM, PF)
        if QREG:   # the next tile's Q in flight during this tile's epilogue
            q_next, _ = _next_rows(tile, programs, n_tiles, hl, seq, sp, rank, BLOCK_M, D, ORDER)
            q = tl.load(q_ptr + q_next + q_tile)
            if UPCAST:
                q = q.to(tl.float32)
        o_tile = o_tile.to(out_ptr.dtype.element_ty)
        if INSTR:
            _stamp(stamps_ptr, tile, 1)
        if MODE == 0:
            tl.store(out_ptr + q_rows, o_tile)
        elif MODE == 3:
            # the chunks the Q-loop did not reach, then this tile: HBM at once, or staged
            sent = tl.minimum(PACE, tl.cdiv(seq // BLOCK_N, pace_stride))
            for c in range(sent, PACE):
                _store_chunk(my_stage, remote_ptr, pend_off, c, pend != 0, row_stride, offs_c,
                             offs_d, CHUNK, D)
            tl.debug_barrier()
            local, off = _owner_dest(b, h, m0, rank, hl, seq, sp, slice_elems, delta_ptr, D,
                                     DELTA)
            if local:
                tl.store(out_ptr + off + offs_m[:, None].to(tl.int64) * row_stride
                         + offs_d[None, :], o_tile)
                pend = pid * 0
            else:
                tl.store(my_stage + offs_m[:, None] * D + offs_d[None, :], o_tile)
                pend = pid * 0 + 1
            pend_off = off
            tl.debug_barrier()
        else:
            _store_to_owner(o_tile, out_ptr, remote_ptr, b, h, m0, rank, offs_m, offs_d,
                            hl, seq, sp, slice_elems, delta_ptr, D, DELTA)
        if MODE == 2:
            if FENCE == 1:
                _fence_sc_sys()
                tl.debug_barrier()
            else:
                tl.debug_barrier()
                tl.atomic_add(flags_ptr + pid, 1, sem="release", scope="sys")
        if INSTR:
            tl.debug_barrier()
            _stamp(stamps_ptr, tile, 2)
    if MODE == 3:   # the program's last staged tile
        for c in range(0, PACE):
            _store_chunk(my_stage, remote_ptr, pend_off, c, pend != 0, row_stride, offs_c,
                         offs_d, CHUNK, D)


@triton.jit
def a2a_store_kernel(out_ptr, dst_ptr, remote_ptr, n_tiles, programs, rank, hl, seq, sp,
                     slice_elems, delta_ptr, D: tl.constexpr, BLOCK_M: tl.constexpr,
                     DELTA: tl.constexpr = False):
    pid = tl.program_id(0)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    for tile in range(pid, n_tiles, programs):
        b, h, m0 = _tile_coords(tile, hl, seq, BLOCK_M)
        src_rows = ((b * hl + h).to(tl.int64) * seq + m0 + offs_m[:, None]) * D + offs_d[None, :]
        val = tl.load(out_ptr + src_rows)
        _store_to_owner(val, dst_ptr, remote_ptr, b, h, m0, rank, offs_m, offs_d,
                        hl, seq, sp, slice_elems, delta_ptr, D, DELTA)
