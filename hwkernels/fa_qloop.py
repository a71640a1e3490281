"""The Q-loop of fa_kernels.fa_fwd_kernel (Triton device functions, inlined into it).

_qloop: one tile's loop over the M/b_n K/V tiles, online softmax in base 2, fp32 accumulator:
  S = Q K^T, softmax step, acc += P V, in that order each step (the shipped loop; its P V
  wgmma and the next step's S run back to back, the softmax waits for both).
_qloop_swp (constexpr SWP of the kernel): software-pipelined by one step, P_{j-1} V_{j-1} in
  flight during the softmax of S_j; _pack / _unpack carry P as int16 bits (Triton would put a
  carried bf16 tensor in shared memory), _hold keeps P_{j-1}'s registers until its wgmma is done
  (hwkernels/fa_sass.py checks both in the SASS).
LSUM (constexpr): the row sums accumulated as P @ ones[b_n, LCOLS] (8 HMMA.16816 per thread per
step instead of the FADD tree and shuffles of tl.sum; measured slower, off by default).
PACE > 0 (MODE 3, fused-paced): after KV step j, _pace_step stores one row chunk of the
program's previously staged tile to its remote owner (_store_chunk) every pace_stride steps;
with PF (constexpr) the chunk is read from the stage into registers one chunk step earlier
(_pf_first before the loop, then _pace_step_pf: store chunk c, load chunk c + 1), so a chunk
step issues only its stores and the stage's read latency is off the Q-loop's serial path.
UPCAST / TMA as in fa_kernels.py.
"""

import triton
import triton.language as tl

from . import fa_exp2

_EMU_ASM1, _EMU_ASM2, _EMU_ASM3, _EMU_ASM4 = (tl.constexpr(fa_exp2.ptx(k)) for k in (1, 2, 3, 4))
_EMU_CONS = tl.constexpr(fa_exp2.constraints())
LCOLS = tl.constexpr(8)            # LSUM: columns of the ones operand (wgmma n8)


@triton.jit
def _store_chunk(stage_ptr, remote_ptr, pend_off, c, do, row_stride, offs_c, offs_d,
                 CH: tl.constexpr, D: tl.constexpr, MASKED: tl.constexpr = True):
    # Rows c*CH .. c*CH+CH-1 of the staged tile to its remote owner (masked off unless `do`;
    # MASKED False: the caller branched on `do`, plain loads and stores).
    rows = c * CH + offs_c
    src = stage_ptr + rows[:, None] * D + offs_d[None, :]
    dst = remote_ptr + pend_off + rows[:, None].to(tl.int64) * row_stride + offs_d[None, :]
    if MASKED:
        mask = tl.full([CH, D], True, tl.int1) & do
        tl.store(dst, tl.load(src, mask=mask, cache_modifier=".cg"), mask=mask)
    else:
        tl.store(dst, tl.load(src, cache_modifier=".cg"))


@triton.jit
def _words(ptr, off):
    # A bf16 pointer (plus an even element offset) as a pointer to 32-bit words: PF carries a
    # chunk as [CH, D / 2] int32 (4 registers per thread at CH = 16, D = 128, 8 warps), not as
    # 16-bit values, which ptxas keeps one per register.
    return ptr.to(tl.pointer_type(tl.int32), bitcast=True) + off // 2


@triton.jit
def _load_chunk(stage_ptr, c, do, nxt, offs_c, offs_w, CH: tl.constexpr, D: tl.constexpr,
                MASKED: tl.constexpr = True):
    # PF: rows c*CH .. of the stage into registers as words (masked: `nxt` kept unless `do`).
    src = _words(stage_ptr, 0) + (c * CH + offs_c)[:, None] * (D // 2) + offs_w[None, :]
    if MASKED:
        mask = tl.full([CH, D // 2], True, tl.int1) & do
        return tl.load(src, mask=mask, other=nxt, cache_modifier=".cg")
    return tl.load(src, cache_modifier=".cg")


@triton.jit
def _put_chunk(remote_ptr, pend_off, c, nxt, do, row_stride, offs_c, offs_w,
               CH: tl.constexpr, D: tl.constexpr, MASKED: tl.constexpr = True):
    # PF: the chunk in registers (words) to rows c*CH .. of its remote owner.
    dst = (_words(remote_ptr, pend_off) + (c * CH + offs_c)[:, None].to(tl.int64)
           * (row_stride // 2) + offs_w[None, :])
    if MASKED:
        tl.store(dst, nxt, mask=tl.full([CH, D // 2], True, tl.int1) & do)
    else:
        tl.store(dst, nxt)


@triton.jit
def _exp2(x, EMU: tl.constexpr, UPCAST: tl.constexpr):
    # 2^x elementwise (fp32); EMU of every 8 elements of a thread on the FMA pipe (fa_exp2).
    if EMU == 0 or UPCAST:
        y = tl.math.exp2(x)
    elif EMU == 1:
        y = tl.inline_asm_elementwise(_EMU_ASM1, _EMU_CONS, [x], dtype=tl.float32, is_pure=True,
                                      pack=8)
    elif EMU == 2:
        y = tl.inline_asm_elementwise(_EMU_ASM2, _EMU_CONS, [x], dtype=tl.float32, is_pure=True,
                                      pack=8)
    elif EMU == 3:
        y = tl.inline_asm_elementwise(_EMU_ASM3, _EMU_CONS, [x], dtype=tl.float32, is_pure=True,
                                      pack=8)
    else:
        y = tl.inline_asm_elementwise(_EMU_ASM4, _EMU_CONS, [x], dtype=tl.float32, is_pure=True,
                                      pack=8)
    return y


@triton.jit
def _rescaled_sum(l_i, alpha, p, LSUM: tl.constexpr):
    # The running row sums rescaled by alpha, plus this step's: l_i [BLOCK_M] (tl.sum), or with
    # LSUM the accumulator [BLOCK_M, LCOLS] of P @ ones, to which the caller's wgmma adds them.
    if LSUM:
        out = l_i * alpha[:, None]
    else:
        out = l_i * alpha + tl.sum(p, 1)
    return out


@triton.jit
def _softmax_step(qk, m_i, l_i, acc, qk_scale, EMU: tl.constexpr = 0,
                  UPCAST: tl.constexpr = False, EARLY: tl.constexpr = False,
                  LSUM: tl.constexpr = False):
    # EMU: exp2 of EMU of every 8 elements on the FMA pipe (fa_exp2). EARLY: alpha first and
    # P's exponent made to depend on it (+ alpha * 0, exact: alpha is in [0, 1]), so ptxas issues
    # alpha's MUFU first and interleaves the acc rescale with P's MUFU work instead of leaving
    # 64 FMUL between the last exp2 and the P V wgmma (fa_sass shows both orders). LSUM: the
    # row sums are not reduced here (_rescaled_sum).
    m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    if EARLY:
        alpha = tl.math.exp2(m_i - m_ij)
        acc = acc * alpha[:, None]
        p = _exp2(qk * qk_scale - (m_ij + alpha * 0.0)[:, None], EMU, UPCAST)
        return p, m_ij, _rescaled_sum(l_i, alpha, p, LSUM), acc
    p = _exp2(qk * qk_scale - m_ij[:, None], EMU, UPCAST)
    alpha = tl.math.exp2(m_i - m_ij)
    return p, m_ij, _rescaled_sum(l_i, alpha, p, LSUM), acc * alpha[:, None]


@triton.jit
def _load_kv(desc, ptr, kv_ptrs, row, UPCAST: tl.constexpr, TMA: tl.constexpr):
    if TMA:
        x = desc.load([row, 0])                            # [BLOCK_N, D]
    else:
        x = tl.load(ptr + kv_ptrs)
    if UPCAST:
        x = x.to(tl.float32)
    return x


@triton.jit
def _pace_step(j, stage_ptr, remote_ptr, pend_off, pend, pace_stride, row_stride, offs_c,
               offs_d, D: tl.constexpr, PACE: tl.constexpr, CHUNK: tl.constexpr,
               BRANCH: tl.constexpr):
    # After KV step j: one row chunk of the previous (staged) tile every pace_stride steps.
    c = j // pace_stride
    do = (pend != 0) & (j % pace_stride == 0) & (c < PACE)
    if BRANCH:   # a uniform branch: the other KV steps run no chunk code
        if do:
            _store_chunk(stage_ptr, remote_ptr, pend_off, c, do, row_stride, offs_c,
                         offs_d, CHUNK, D, False)
    else:
        _store_chunk(stage_ptr, remote_ptr, pend_off, c, do, row_stride, offs_c, offs_d,
                     CHUNK, D)


@triton.jit
def _pace_step_pf(j, nxt, stage_ptr, remote_ptr, pend_off, pend, pace_stride, row_stride,
                  offs_c, D: tl.constexpr, PACE: tl.constexpr, CHUNK: tl.constexpr,
                  BRANCH: tl.constexpr):
    # PF: _pace_step with chunk c already in registers (`nxt`, loaded one chunk step earlier):
    # its step issues only the stores, then loads chunk c + 1, which the next chunk step stores.
    # Returns the registers carried to the next step.
    offs_w = tl.arange(0, D // 2)
    c = j // pace_stride
    do = (pend != 0) & (j % pace_stride == 0) & (c < PACE)
    more = do & (c + 1 < PACE)
    if BRANCH:
        if do:
            _put_chunk(remote_ptr, pend_off, c, nxt, do, row_stride, offs_c, offs_w, CHUNK, D,
                       False)
            if more:
                nxt = _load_chunk(stage_ptr, c + 1, more, nxt, offs_c, offs_w, CHUNK, D, False)
    else:
        _put_chunk(remote_ptr, pend_off, c, nxt, do, row_stride, offs_c, offs_w, CHUNK, D)
        nxt = _load_chunk(stage_ptr, c + 1, more, nxt, offs_c, offs_w, CHUNK, D)
    return nxt


@triton.jit
def _pf_first(stage_ptr, pend, offs_c, D: tl.constexpr, CHUNK: tl.constexpr,
              BRANCH: tl.constexpr):
    # PF: chunk 0 of the staged tile into registers before the Q-loop (zeros if none is pending).
    offs_w = tl.arange(0, D // 2)
    nxt = tl.zeros([CHUNK, D // 2], dtype=tl.int32)
    if BRANCH:
        if pend != 0:
            nxt = _load_chunk(stage_ptr, 0, pend != 0, nxt, offs_c, offs_w, CHUNK, D, False)
    else:
        nxt = _load_chunk(stage_ptr, 0, pend != 0, nxt, offs_c, offs_w, CHUNK, D)
    return nxt


@triton.jit
def _pack(p, dtype, UPCAST: tl.constexpr):
    # P in the MMA's input type, carried across the loop as raw 16-bit integers: a bf16
    # tensor carried as such is put in shared memory by Triton (then its wgmma is not async).
    if UPCAST:
        return p
    return p.to(dtype).to(tl.int16, bitcast=True)


@triton.jit
def _hold(p_new, p_old, zero16, l_i, UPCAST: tl.constexpr):
    # Returns p_new once this warpgroup's wgmma P_{j-1} V_{j-1} is complete, with a read of
    # p_old after that wait: the registers of P_{j-1}, which the wgmma reads asynchronously,
    # stay allocated to it until then (ptxas does not protect a wgmma's A registers, and
    # Triton's waits hold only its accumulator). The wait is predicated on the row sums l_i
    # (the softmax's last result; the predicate is true at run time), so it is not hoisted
    # above the softmax. zero16 is 0 at run time, unknown to the compiler, so neither the
    # predicate nor the read of p_old can be folded: $0 = ($2 & $3) ^ $1 per 32-bit register.
    if UPCAST:
        return p_new
    return tl.inline_asm_elementwise(
        "{\n\t.reg .pred q;\n\t.reg .b32 t;\n\tand.b32 t, $4, $3;\n\t"
        "setp.eq.b32 q, t, 0;\n\t@q wgmma.wait_group.sync.aligned 0;\n\t"
        "lop3.b32 $0, $2, $3, $1, 0x6A;\n\t}", "=r,r,r,r,r,r",
        [p_new, p_old, zero16, tl.broadcast_to(l_i[:, None], p_new.shape)], dtype=tl.int16,
        is_pure=False, pack=2)


@triton.jit
def _unpack(p, dtype, UPCAST: tl.constexpr):
    if UPCAST:
        return p
    return p.to(dtype, bitcast=True)


@triton.jit
def _qloop_swp(q, kv_base, k_ptr, v_ptr, desc_k, desc_v, kv_row0, seq, offs_n, offs_d,
               qk_scale, stage_ptr, remote_ptr, pend_off, pend, pace_stride, row_stride, offs_c,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr,
               UPCAST: tl.constexpr, TMA: tl.constexpr, PACE: tl.constexpr,
               CHUNK: tl.constexpr, BRANCH: tl.constexpr):
    # Software-pipelined by one KV step (FA3's intra-warpgroup overlap): iteration j issues
    # S_j = Q K_j^T (waited at once), rescales acc, issues P_{j-1} V_{j-1} and runs the softmax
    # of S_j while that wgmma is still on the tensor cores. Its result is only carried to the
    # next iteration, so Triton keeps it async (waited by the next S's wait). Same arithmetic
    # as _qloop: acc_j = acc_{j-1} * alpha_{j-1} + P_{j-1} V_{j-1}, P_j at the row max m_j.
    kv_ptrs = kv_base + offs_n[:, None].to(tl.int64) * D + offs_d[None, :]
    k = _load_kv(desc_k, k_ptr, kv_ptrs, kv_row0, UPCAST, TMA)
    qk = tl.dot(q, tl.trans(k))
    m_i = tl.max(qk, 1) * qk_scale
    p = tl.math.exp2(qk * qk_scale - m_i[:, None])
    l_i = tl.sum(p, 1)
    p = _pack(p, q.dtype, UPCAST)                          # carried as 16-bit integers
    alpha = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    zero16 = (tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.int32) + (seq >> 31)).to(tl.int16)
    row = kv_row0
    for start_n in range(BLOCK_N, seq, BLOCK_N):
        k = _load_kv(desc_k, k_ptr, kv_ptrs + BLOCK_N * D, row + BLOCK_N, UPCAST, TMA)
        qk = tl.dot(q, tl.trans(k))                        # S_j (its wait also ends PV_{j-2})
        acc = acc * alpha[:, None]
        v = _load_kv(desc_v, v_ptr, kv_ptrs, row, UPCAST, TMA)
        acc = tl.dot(_unpack(p, q.dtype, UPCAST), v, acc)  # + P_{j-1} V_{j-1}, left in flight
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p_new = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p_new, 1)
        p = _hold(_pack(p_new, q.dtype, UPCAST), p, zero16, l_i, UPCAST)
        m_i = m_ij
        if PACE > 0:
            _pace_step(start_n // BLOCK_N - 1, stage_ptr, remote_ptr, pend_off, pend,
                       pace_stride, row_stride, offs_c, offs_d, D, PACE, CHUNK, BRANCH)
        kv_ptrs += BLOCK_N * D
        row += BLOCK_N
    v = _load_kv(desc_v, v_ptr, kv_ptrs, row, UPCAST, TMA)
    acc = tl.dot(_unpack(p, q.dtype, UPCAST), v, acc * alpha[:, None])
    if PACE > 0:
        _pace_step(seq // BLOCK_N - 1, stage_ptr, remote_ptr, pend_off, pend, pace_stride,
                   row_stride, offs_c, offs_d, D, PACE, CHUNK, BRANCH)
    return acc / l_i[:, None]


@triton.jit
def _qloop_raw(q, kv_base, k_ptr, v_ptr, desc_k, desc_v, kv_row0, seq, offs_n, offs_d, qk_scale,
               stage_ptr, remote_ptr, pend_off, pend, pace_stride, row_stride, offs_c,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr,
               UPCAST: tl.constexpr, TMA: tl.constexpr, PACE: tl.constexpr,
               CHUNK: tl.constexpr, BRANCH: tl.constexpr, EMU: tl.constexpr = 0,
               EARLY: tl.constexpr = False, LSUM: tl.constexpr = False, PF: tl.constexpr = False):
    # KV rows kv_row0 .. kv_row0 + seq - 1: the unnormalized accumulator, row max m_i (base 2,
    # scaled) and row sum l_i (fa_split merges KV splits of one tile with them).
    # LSUM: the row sums on the tensor cores, l_acc += P @ ones [BLOCK_N, LCOLS] (the bf16 P
    # that P V multiplies), instead of the per-step FADD tree and shuffles of tl.sum(p, 1).
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    if LSUM:
        l_i = tl.zeros([BLOCK_M, LCOLS], dtype=tl.float32)
        ones = tl.full([BLOCK_N, LCOLS], 1.0, q.dtype)
    else:
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    kv_ptrs = kv_base + offs_n[:, None].to(tl.int64) * D + offs_d[None, :]
    row = kv_row0
    if PACE > 0 and PF:   # PF: the chunk a chunk step stores is loaded one chunk step before
        nxt = _pf_first(stage_ptr, pend, offs_c, D, CHUNK, BRANCH)
    for start_n in range(0, seq, BLOCK_N):
        k = _load_kv(desc_k, k_ptr, kv_ptrs, row, UPCAST, TMA)
        qk = tl.dot(q, tl.trans(k))                        # [BLOCK_M, BLOCK_N] fp32
        p, m_i, l_i, acc = _softmax_step(qk, m_i, l_i, acc, qk_scale, EMU, UPCAST, EARLY, LSUM)
        v = _load_kv(desc_v, v_ptr, kv_ptrs, row, UPCAST, TMA)
        pv = p.to(v.dtype)
        acc = tl.dot(pv, v, acc)
        if LSUM:
            l_i = tl.dot(pv, ones, l_i)
        if PACE > 0:
            if PF:
                nxt = _pace_step_pf(start_n // BLOCK_N, nxt, stage_ptr, remote_ptr, pend_off,
                                    pend, pace_stride, row_stride, offs_c, D, PACE, CHUNK,
                                    BRANCH)
            else:
                _pace_step(start_n // BLOCK_N, stage_ptr, remote_ptr, pend_off, pend,
                           pace_stride, row_stride, offs_c, offs_d, D, PACE, CHUNK, BRANCH)
        kv_ptrs += BLOCK_N * D
        row += BLOCK_N
    if LSUM:
        l_i = tl.max(l_i, 1)                             # LCOLS equal columns
    return acc, m_i, l_i


@triton.jit
def _qloop(q, kv_base, k_ptr, v_ptr, desc_k, desc_v, kv_row0, seq, offs_n, offs_d, qk_scale,
           stage_ptr, remote_ptr, pend_off, pend, pace_stride, row_stride, offs_c,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr,
           UPCAST: tl.constexpr, TMA: tl.constexpr, PACE: tl.constexpr,
           CHUNK: tl.constexpr, BRANCH: tl.constexpr, EMU: tl.constexpr = 0,
           EARLY: tl.constexpr = False, LSUM: tl.constexpr = False, PF: tl.constexpr = False):
    acc, m_i, l_i = _qloop_raw(q, kv_base, k_ptr, v_ptr, desc_k, desc_v, kv_row0, seq, offs_n,
                               offs_d, qk_scale, stage_ptr, remote_ptr, pend_off, pend,
                               pace_stride, row_stride, offs_c, BLOCK_M, BLOCK_N, D, UPCAST,
                               TMA, PACE, CHUNK, BRANCH, EMU, EARLY, LSUM, PF)
    return acc / l_i[:, None]
