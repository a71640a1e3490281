"""Triton kernels of the FA + post-attention A2A experiment (kernels only; see fa.py).

Shapes (all contiguous, bf16 unless noted; layout math in fa_layout.py):
  q, k, v   [batch, HL, M, D]      rank r's heads after the pre-attention A2A (HL = H / N)
  out       MODE 0: [batch, HL, M, D] local output (FA-only, and the A2A kernels' source)
            MODE 1, 2: owner r's buffer [batch, M/N, H, D] in local HBM
  remote    [N-1, batch, M/N, H, D] the other owners' buffers (host memory; slot order of
            fa_layout.remote_slot), unused in MODE 0
  stamps    int64 [n_tiles, 6] (INSTR only): %globaltimer ns at tile start, at Q-loop end,
            at store end, then %clock64 at the same three points
  flags     int32 [programs] (MODE 2, FENCE 2 only): the per-tile release target

fa_fwd_kernel is persistent: program p takes tiles p, p + programs, ... (grid = SM count or
fewer); each tile is b_m query rows of one (b, h), a full Q-loop over all M/b_n K/V tiles with
the online softmax (scores in base 2), then the epilogue:
  MODE 0  store the tile into `out` (FA-only);
  MODE 1  fused: store the tile to its owner (local HBM when owner == rank, else the remote
          buffer) and move straight on to the next tile: no communication warp or program;
  MODE 2  completion-coupled: MODE 1, then every thread waits until its stores are visible at
          system scope before the next tile starts: FENCE 1 `fence.sc.sys` (inline asm),
          FENCE 2 a CTA barrier then an atomic add with sem=release, scope=sys.
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
def _store_to_owner(tile_val, out_ptr, remote_ptr, b, h, m0, rank, offs_m, offs_d,
                    hl, seq, sp, slice_elems, D: tl.constexpr):
    # Owner o holds [batch, M/N, H, D]: row m0+i of local head h at
    # ((b*M/N + m0 - o*M/N) * H + rank*HL + h) * D + i*H*D (fa_layout.dest_offset).
    tpo = seq // sp
    heads = hl * sp
    o = m0 // tpo
    row0 = (b * tpo + m0 - o * tpo).to(tl.int64)
    base = (row0 * heads + rank * hl + h) * D
    rows = offs_m[:, None].to(tl.int64) * (heads * D) + offs_d[None, :]
    if o == rank:
        tl.store(out_ptr + base + rows, tile_val)
    else:
        slot = o - (o > rank).to(tl.int32)
        tl.store(remote_ptr + slot.to(tl.int64) * slice_elems + base + rows, tile_val)


@triton.jit
def _softmax_step(qk, m_i, l_i, acc, qk_scale):
    m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
    alpha = tl.math.exp2(m_i - m_ij)
    return p, m_ij, l_i * alpha + tl.sum(p, 1), acc * alpha[:, None]


@triton.jit
def _qloop(q, kv_base, k_ptr, v_ptr, desc_k, desc_v, kv_row0, seq, offs_n, offs_d, qk_scale,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr,
           UPCAST: tl.constexpr, TMA: tl.constexpr):
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    kv_ptrs = kv_base + offs_n[:, None].to(tl.int64) * D + offs_d[None, :]
    row = kv_row0
    for start_n in range(0, seq, BLOCK_N):
        if TMA:
            k = desc_k.load([row, 0])                      # [BLOCK_N, D]
        else:
            k = tl.load(k_ptr + kv_ptrs)
        if UPCAST:
            k = k.to(tl.float32)
        qk = tl.dot(q, tl.trans(k))                        # [BLOCK_M, BLOCK_N] fp32
        p, m_i, l_i, acc = _softmax_step(qk, m_i, l_i, acc, qk_scale)
        if TMA:
            v = desc_v.load([row, 0])                      # [BLOCK_N, D]
        else:
            v = tl.load(v_ptr + kv_ptrs)
        if UPCAST:
            v = v.to(tl.float32)
        acc = tl.dot(p.to(v.dtype), v, acc)
        kv_ptrs += BLOCK_N * D
        row += BLOCK_N
    return acc / l_i[:, None]


@triton.jit
def fa_fwd_kernel(q_ptr, k_ptr, v_ptr, out_ptr, remote_ptr, stamps_ptr, flags_ptr, qk_scale,
                  n_tiles, programs, rank, hl, seq, sp, slice_elems,
                  D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  MODE: tl.constexpr, FENCE: tl.constexpr, INSTR: tl.constexpr,
                  UPCAST: tl.constexpr, TMA: tl.constexpr):
    pid = tl.program_id(0)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    desc_k = k_ptr
    desc_v = v_ptr
    if TMA:
        rows_total = n_tiles * BLOCK_M
        desc_k = tl.make_tensor_descriptor(k_ptr, shape=[rows_total, D], strides=[D, 1],
                                           block_shape=[BLOCK_N, D])
        desc_v = tl.make_tensor_descriptor(v_ptr, shape=[rows_total, D], strides=[D, 1],
                                           block_shape=[BLOCK_N, D])
    for tile in range(pid, n_tiles, programs):
        if INSTR:
            _stamp(stamps_ptr, tile, 0)
        b, h, m0 = _tile_coords(tile, hl, seq, BLOCK_M)
        kv_row0 = (b * hl + h) * seq
        kv_base = kv_row0.to(tl.int64) * D
        q_rows = kv_base + (m0 + offs_m)[:, None].to(tl.int64) * D + offs_d[None, :]
        q = tl.load(q_ptr + q_rows)
        if UPCAST:
            q = q.to(tl.float32)
        o_tile = _qloop(q, kv_base, k_ptr, v_ptr, desc_k, desc_v, kv_row0, seq, offs_n, offs_d,
                        qk_scale, BLOCK_M, BLOCK_N, D, UPCAST, TMA)
        o_tile = o_tile.to(out_ptr.dtype.element_ty)
        if INSTR:
            _stamp(stamps_ptr, tile, 1)
        if MODE == 0:
            tl.store(out_ptr + q_rows, o_tile)
        else:
            _store_to_owner(o_tile, out_ptr, remote_ptr, b, h, m0, rank, offs_m, offs_d,
                            hl, seq, sp, slice_elems, D)
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


@triton.jit
def a2a_store_kernel(out_ptr, dst_ptr, remote_ptr, n_tiles, programs, rank, hl, seq, sp,
                     slice_elems, D: tl.constexpr, BLOCK_M: tl.constexpr):
    pid = tl.program_id(0)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    for tile in range(pid, n_tiles, programs):
        b, h, m0 = _tile_coords(tile, hl, seq, BLOCK_M)
        src_rows = ((b * hl + h).to(tl.int64) * seq + m0 + offs_m[:, None]) * D + offs_d[None, :]
        val = tl.load(out_ptr + src_rows)
        _store_to_owner(val, dst_ptr, remote_ptr, b, h, m0, rank, offs_m, offs_d,
                        hl, seq, sp, slice_elems, D)
