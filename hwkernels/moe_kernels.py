"""Triton kernel of the fused MoE layer (kernels only; launcher and reference in moe.py).

One persistent kernel, `moe_fused_kernel`: program s (one per SM, co-resident) runs stream s
of the tile table, tiles[offsets[s]:offsets[s+1]] in order. A tile is (kind, expert, mblock,
nblock) as in MOE_CONTRACT.md. Pointers (R routed rows, M m-blocks, E local experts):

    x_ptr        [T, H]       bf16 | fp8 e4m3   token rows (Dispatch source)
    w1_ptr       [E, 2I, H]   bf16 | fp8        K-major: row n < I gate column n, I + n up
    w2_ptr       [E, H, I]    bf16 | fp8        K-major (the contract's w2[e] transposed)
    act_ptr      [R, I]       bf16 | fp8        Linear-1 output (HBM), rows in expert order
    out_ptr      [T, topk, H] bf16              Combine destination (host or peer memory)
    dest_delta_ptr [EP] int64                   EP > 1: rank r's destination buffer is at
                                                out_ptr + dest_delta[r] elements (16 B aligned)
    row_token_ptr, row_slot_ptr [R] int32; row_weight_ptr [R] fp32
    mb_row0_ptr, mb_rend_ptr [M] int32          first row and expert end row of m-block m
    l2_full_ptr  [M] int32                      zeroed before launch
    tiles_ptr [n, 4] int32, offsets_ptr [S + 1] int32
    scale_ptr    fp32 [2 + 2E]                  fp8 only: sx, sa, sw1[E], sw2[E] (per tensor)
    err_ptr      [2] int32                      err[0] = 1 on a wait timeout, err[1] = tile + 1
    stamp_ptr    [n, 6] int64                   STAMPS only, %globaltimer ns (see below)
    sm_ptr       [S] int32                      STAMPS only, %smid of each program
    clock_ptr    [2] int64                      CLK only: every program adds its SM cycles
                                                (%clock64) and ns (%globaltimer) from start to
                                                exit; their ratio is the launch's mean SM clock

Dispatch on one GPU is fused into Linear-1's A loads: an L1 tile gathers the token rows of
its m-block (x[row_token[r]]) straight from x, so no dispatch buffer exists. With N > 1 the
rows arrive from the other ranks before the kernel (moe_dist.dispatch, an all-to-all) into a
receive buffer [T * N, H] indexed by the global token, which these same loads read; Combine
then writes token t (of rank t // T_LOCAL) into that rank's buffer.

Ordering ops, exactly (SIGNAL = 0, the correct design the bench records):
  L1 epilogue: act stores (HBM); bar.sync; thread 0: atom.add.release.gpu l2_full[m] += 1.
      The release waits until this SM's earlier stores, the Combine stores of the L2 tiles
      before it included, have drained: it WAITS BEHIND COMBINE STORES (signal_on_drain).
  L2 wait, POLL = 1 (GPU default): every thread polls l2_full[m] with ld.acquire.gpu
      (inline PTX) until it reads >= need, then bar.sync. The load that reads >= need reads
      the last of the need release RMWs on l2_full[m] (or a later value of their release
      sequence), so each thread synchronizes with all need L1 releases of m-block m: their
      act stores happen before that thread's later loads (its pointer loads, and for the
      elected thread its TMA loads, in program order), with no bar.sync-cumulativity
      argument needed. A poll that reads < need is an acquire that orders nothing
      useful: harmless. One L2 round trip per ready tile; an acquire load does not wait
      for earlier stores. POLL = 0 (and always under the interpreter): ld.volatile polls
      (relaxed), then tl.atomic_add(l2_full[m], 0, acquire) by thread 0 (Triton lowers it
      to ld.global.gpu.acquire), its value broadcast through shared memory, and bar.sync
      (two round trips when ready: the pre-POLL kernel, kept to measure against).
  L2 epilogue: Combine stores (plain st.global, no fence, no signal after them).
SIGNAL = 1 replaces the release by a relaxed atomic after the same bar.sync; the PTX model
does not order the act stores before it, so it exists only to measure what the release
costs (stamp column 5 - column 4), never for records of a correct kernel.
No warp specialization: the Combine stores are issued by the same warps that run the next
mainloop, with no staging buffer between (the DES's staging depth 0).

Stamps (STAMPS, %globaltimer, each after a bar.sync): [0] tile start = wait start,
[1] wait end = mainloop start, [2] mainloop end, [3] epilogue store start, [4] store end
(every warp's stores issued), [5] tile end (after L1's signal). A wait that runs past
max_spins polls sets err, and every program stops within two tiles (the flag is read at a
tile's start together with the next tile's indices, and acted on at its end).
TMA (constexpr): the weight tiles and Linear-2's activation tiles come through device-side
tensor descriptors (w1 as [E * 2I, H], w2 as [E * H, I], act as [R, I];
hwkernels.tma.set_tma_allocator gives Triton their scratch); Linear-1's A operand, the token-row gather, stays pointer loads.
HOST_DESC: the same three descriptors made once on the host (w1_hd, w2_hd, act_hd,
triton TensorDescriptor kernel arguments) instead of in every program's prologue (a global
store and a tensormap proxy fence each); unused (plain tensors) otherwise.
TMA = False loads every operand through pointers. ACC_K1 / ACC_K2: fp8 accumulator
promotion (_dot). NS1 / NS2: the software-pipeline depth of Linear-1's / Linear-2's K loop
(the two loops' shared-memory buffers are live in different branches and share space).
Under the interpreter (INTERPRET) dots run in fp32 (its bf16 dot is wrong, Triton 3.6) and
the e4m3 cast is pre-rounded (_to_e4m3); the GPU path uses native bf16/e4m3 tensor-core dots.
"""

import triton
import triton.language as tl

@triton.jit
def _sreg64(asm: tl.constexpr, on: tl.constexpr):
    """A 64-bit special register read by ``asm`` (0 when off: the interpreter has none)."""
    if on:
        v = tl.inline_asm_elementwise(asm, "=l", [], dtype=tl.int64, is_pure=False, pack=1)
    else:
        v = tl.zeros((), dtype=tl.int64)
    return v


@triton.jit
def _now(on: tl.constexpr):
    return _sreg64("mov.u64 $0, %globaltimer;", on)


@triton.jit
def _cycles(on: tl.constexpr):
    return _sreg64("mov.u64 $0, %clock64;", on)


@triton.jit
def _smid(on: tl.constexpr):
    if on:
        s = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32,
                                      is_pure=False, pack=1)
    else:
        s = tl.zeros((), dtype=tl.int32) - 1
    return s


@triton.jit
def _stamp(stamp_ptr, tile, col: tl.constexpr, on: tl.constexpr):
    if on:
        tl.debug_barrier()
        tl.store(stamp_ptr + tile * 6 + col, _now(on))


@triton.jit
def _dot(a, b, acc, ACC_K: tl.constexpr, INTERPRET: tl.constexpr):
    """acc + a @ b. fp8 only: ACC_K > 0 promotes the tensor core's accumulator into fp32
    every ACC_K products along K (sm_90's fp8 wgmma accumulates with ~14 mantissa bits;
    Triton's sm_90 default never promotes, max_num_imprecise_acc = 2**30); ACC_K < 0
    promotes once per K step by an fp32 add of a fresh product, acc + dot(a, b) (Triton
    keeps the two apart for fp8 on sm_90: its dot+add fold skips imprecise-acc dots)."""
    if INTERPRET:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
    if ACC_K > 0:
        return tl.dot(a, b, acc, max_num_imprecise_acc=ACC_K)
    if ACC_K < 0:
        return acc + tl.dot(a, b)
    return tl.dot(a, b, acc)


@triton.jit
def _to_e4m3(v, INTERPRET: tl.constexpr):
    """fp32 -> e4m3. The interpreter's cast drops a rounding carry into the exponent (1.94
    -> 1.0, Triton 3.6), so there the value is first rounded onto the e4m3 grid by hand."""
    if INTERPRET:
        ex = tl.maximum(tl.floor(tl.log2(tl.maximum(tl.abs(v), 1e-30))), -6.0)
        step = tl.exp2(ex - 3.0)
        v = tl.floor(v / step + 0.5) * step
    return v.to(tl.float8e4nv)


@triton.jit
def _linear1(x_ptr, w1_ptr, w1_desc, act_ptr, row_token_ptr, scale_ptr, e, row0, rend, nb,
             H: tl.constexpr, I: tl.constexpr, E: tl.constexpr, BM: tl.constexpr,
             BN: tl.constexpr, BK: tl.constexpr, FP8: tl.constexpr, TMA: tl.constexpr,
             ACC_K: tl.constexpr, NS: tl.constexpr, INTERPRET: tl.constexpr, stamp_ptr, t,
             STAMPS: tl.constexpr):
    """act[rows, cols] = silu(x[tok] @ Wg[:, cols]) * (x[tok] @ Wu[:, cols]).

    A (the gathered token rows, Dispatch) is always a pointer gather; with TMA the gate and
    up weight tiles [BN, BK] (K-major) come through the w1 descriptor."""
    rows = row0 + tl.arange(0, BM)
    rmask = rows < rend
    tok = tl.load(row_token_ptr + rows, mask=rmask, other=0).to(tl.int64)
    offs_k = tl.arange(0, BK)
    cols = nb * BN + tl.arange(0, BN)
    a_ptrs = x_ptr + tok[:, None] * H + offs_k[None, :]          # gathered rows (Dispatch)
    g_ptrs = w1_ptr + e.to(tl.int64) * H * 2 * I + cols[None, :] * H + offs_k[:, None]
    wrow = e * (2 * I) + nb * BN                                  # w1 desc row of gate col 0
    acc_g = tl.zeros((BM, BN), dtype=tl.float32)
    acc_u = tl.zeros((BM, BN), dtype=tl.float32)
    _stamp(stamp_ptr, t, 1, STAMPS)
    for k in tl.range(0, H, BK, num_stages=NS):  # per step: read BM*BK + 2*BK*BN elements
        a = tl.load(a_ptrs)
        if TMA:
            bg = w1_desc.load([wrow, k]).T
            bu = w1_desc.load([wrow + I, k]).T
        else:
            bg = tl.load(g_ptrs)
            bu = tl.load(g_ptrs + I * H)
        acc_g = _dot(a, bg, acc_g, ACC_K, INTERPRET)
        acc_u = _dot(a, bu, acc_u, ACC_K, INTERPRET)
        a_ptrs += BK
        g_ptrs += BK
    _stamp(stamp_ptr, t, 2, STAMPS)
    if FP8:
        s1 = tl.load(scale_ptr) * tl.load(scale_ptr + 2 + e)
        acc_g = acc_g * s1
        acc_u = acc_u * s1
    act = acc_g * tl.sigmoid(acc_g) * acc_u
    dst = act_ptr + rows.to(tl.int64)[:, None] * I + cols[None, :]
    _stamp(stamp_ptr, t, 3, STAMPS)
    if FP8:
        q = tl.clamp(act / tl.load(scale_ptr + 1), -448.0, 448.0)
        tl.store(dst, _to_e4m3(q, INTERPRET), mask=rmask[:, None])
    else:
        tl.store(dst, act.to(tl.bfloat16), mask=rmask[:, None])


@triton.jit
def _signal(l2_full_ptr, mb, SIGNAL: tl.constexpr):
    tl.debug_barrier()
    if SIGNAL == 0:
        tl.atomic_add(l2_full_ptr + mb, 1, sem="release", scope="gpu")
    else:
        tl.atomic_add(l2_full_ptr + mb, 1, sem="relaxed", scope="gpu")


@triton.jit
def _ld_acquire(p):
    """ld.acquire.gpu of the int32 at p, by every thread (GPU only)."""
    return tl.inline_asm_elementwise("ld.global.acquire.gpu.b32 $0, [$1];", "=r,l", [p],
                                     dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _wait(l2_full_ptr, mb, need, max_spins, POLL: tl.constexpr):
    """Wait for l2_full[mb] >= need, up to max_spins polls; True when ready (docstring top:
    POLL = 1 acquire-load polls, POLL = 0 relaxed polls then thread 0's acquire)."""
    if POLL == 1:
        v = _ld_acquire(l2_full_ptr + mb)
        spins = 0
        while (v < need) & (spins < max_spins):
            v = _ld_acquire(l2_full_ptr + mb)
            spins += 1
        ready = v >= need
    else:
        v = tl.load(l2_full_ptr + mb, volatile=True)
        spins = 0
        while (v < need) & (spins < max_spins):
            v = tl.load(l2_full_ptr + mb, volatile=True)
            spins += 1
        ready = v >= need
        if ready:   # the result is used, else the compiler drops the acquire as dead code
            ready = tl.atomic_add(l2_full_ptr + mb, 0, sem="acquire", scope="gpu") >= need
    tl.debug_barrier()
    return ready


@triton.jit
def _linear2_combine(act_ptr, act_desc, w2_ptr, w2_desc, out_ptr, dest_delta_ptr,
                     row_token_ptr, row_slot_ptr, row_weight_ptr, scale_ptr, e, row0, rend,
                     nb, H: tl.constexpr, I: tl.constexpr, E: tl.constexpr,
                     TOPK: tl.constexpr, T_LOCAL: tl.constexpr, EP: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, FP8: tl.constexpr,
                     TMA: tl.constexpr, ACC_K: tl.constexpr, NS: tl.constexpr,
                     INTERPRET: tl.constexpr, stamp_ptr, t, STAMPS: tl.constexpr,
                     CMOD: tl.constexpr, EVICT: tl.constexpr):
    """out[tok, slot, cols] = w_row * (act[rows] @ W2[:, cols]) for the valid rows.

    With TMA both operands come through descriptors: act rows row0..row0+BM (rows past the
    expert's end belong to the next expert or are past the buffer, zero-filled: their
    results are masked at the store), w2 tiles [BN, BK] K-major. The epilogue's row
    metadata is loaded before the mainloop so its latency hides under it."""
    rows = row0 + tl.arange(0, BM)
    rmask = rows < rend
    tok = tl.load(row_token_ptr + rows, mask=rmask, other=0).to(tl.int64)
    slot = tl.load(row_slot_ptr + rows, mask=rmask, other=0).to(tl.int64)
    w = tl.load(row_weight_ptr + rows, mask=rmask, other=0.0)
    rows_c = tl.minimum(rows, rend - 1).to(tl.int64)        # masked rows read a valid row
    offs_k = tl.arange(0, BK)
    cols = nb * BN + tl.arange(0, BN)
    a_ptrs = act_ptr + rows_c[:, None] * I + offs_k[None, :]
    b_ptrs = w2_ptr + e.to(tl.int64) * I * H + cols[None, :] * I + offs_k[:, None]
    wrow = e * H + nb * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    _stamp(stamp_ptr, t, 1, STAMPS)
    for k in tl.range(0, I, BK, num_stages=NS):  # per step: read BM*BK + BK*BN elements
        if TMA:
            a = act_desc.load([row0, k])
            b = w2_desc.load([wrow, k]).T
        else:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        acc = _dot(a, b, acc, ACC_K, INTERPRET)
        a_ptrs += BK
        b_ptrs += BK
    _stamp(stamp_ptr, t, 2, STAMPS)
    if FP8:
        acc = acc * (tl.load(scale_ptr + 1) * tl.load(scale_ptr + 2 + E + e))
    y = (acc * w[:, None]).to(tl.bfloat16)
    if EP == 1:
        dst = out_ptr + (tok * TOPK + slot)[:, None] * H + cols[None, :]
    else:      # token t lives on rank t // T_LOCAL: its buffer is dest_delta[rank] away
        delta = tl.multiple_of(tl.load(dest_delta_ptr + tok // T_LOCAL), 8)
        drow = (tok % T_LOCAL) * TOPK + slot
        dst = out_ptr + delta[:, None] + drow[:, None] * H + cols[None, :]
    _stamp(stamp_ptr, t, 3, STAMPS)
    # Combine: BM*BN*2 bytes to the destination (CMOD / EVICT: KernelConfig.combine_hint, "" by default)
    tl.store(dst, y, mask=rmask[:, None], cache_modifier=CMOD, eviction_policy=EVICT)


@triton.jit
def _tile(tiles_ptr, mb_row0_ptr, mb_rend_ptr, t, end):
    """(kind, expert, mblock, nblock, row0, rend) of tile t (zeros when t >= end)."""
    ok = t < end
    kind = tl.load(tiles_ptr + t * 4, mask=ok, other=0)
    e = tl.load(tiles_ptr + t * 4 + 1, mask=ok, other=0)
    mb = tl.load(tiles_ptr + t * 4 + 2, mask=ok, other=0)
    nb = tl.load(tiles_ptr + t * 4 + 3, mask=ok, other=0)
    row0 = tl.load(mb_row0_ptr + mb, mask=ok, other=0)
    rend = tl.load(mb_rend_ptr + mb, mask=ok, other=0)
    return kind, e, mb, nb, row0, rend


@triton.jit
def moe_fused_kernel(x_ptr, w1_ptr, w2_ptr, act_ptr, out_ptr, row_token_ptr, row_slot_ptr,
                     row_weight_ptr, mb_row0_ptr, mb_rend_ptr, l2_full_ptr, tiles_ptr,
                     dest_delta_ptr, offsets_ptr, scale_ptr, err_ptr, stamp_ptr, sm_ptr,
                     clock_ptr, max_spins, n_rows, w1_hd, w2_hd, act_hd,
                     H: tl.constexpr, I: tl.constexpr, E: tl.constexpr, TOPK: tl.constexpr,
                     T_LOCAL: tl.constexpr, EP: tl.constexpr, BM: tl.constexpr,
                     BN1: tl.constexpr, BN2: tl.constexpr, BK1: tl.constexpr,
                     BK2: tl.constexpr, FP8: tl.constexpr, SIGNAL: tl.constexpr,
                     STAMPS: tl.constexpr, TMA: tl.constexpr, ACC_K1: tl.constexpr,
                     ACC_K2: tl.constexpr, NS1: tl.constexpr, NS2: tl.constexpr,
                     POLL: tl.constexpr, HOST_DESC: tl.constexpr, INTERPRET: tl.constexpr,
                     CLK: tl.constexpr = False, CMOD: tl.constexpr = "", EVICT: tl.constexpr = ""):
    s = tl.program_id(0)
    ns0 = _now(CLK)
    clk0 = _cycles(CLK)
    if STAMPS:
        tl.store(sm_ptr + s, _smid(STAMPS))
    if TMA and HOST_DESC:     # descriptors made on the host, passed as kernel arguments
        w1_desc = w1_hd
        w2_desc = w2_hd
        act_desc = act_hd
    elif TMA:     # device-side descriptors (global scratch from triton.set_allocator)
        w1_desc = tl.make_tensor_descriptor(w1_ptr, shape=[E * 2 * I, H], strides=[H, 1],
                                            block_shape=[BN1, BK1])
        w2_desc = tl.make_tensor_descriptor(w2_ptr, shape=[E * H, I], strides=[I, 1],
                                            block_shape=[BN2, BK2])
        act_desc = tl.make_tensor_descriptor(act_ptr, shape=[n_rows, I], strides=[I, 1],
                                             block_shape=[BM, BK2])
    else:
        w1_desc = w1_ptr
        w2_desc = w2_ptr
        act_desc = act_ptr
    t = tl.load(offsets_ptr + s)
    end = tl.load(offsets_ptr + s + 1)
    need = I // BN1
    kind, e, mb, nb, row0, rend = _tile(tiles_ptr, mb_row0_ptr, mb_rend_ptr, t, end)
    while t < end:
        _stamp(stamp_ptr, t, 0, STAMPS)
        # the next tile's indices and the error flag, loaded now, used after this tile
        nkind, ne, nmb, nnb, nrow0, nrend = _tile(tiles_ptr, mb_row0_ptr, mb_rend_ptr,
                                                  t + 1, end)
        stop = tl.load(err_ptr, volatile=True)
        if kind == 0:
            _linear1(x_ptr, w1_ptr, w1_desc, act_ptr, row_token_ptr, scale_ptr, e, row0,
                     rend, nb, H, I, E, BM, BN1, BK1, FP8, TMA, ACC_K1, NS1, INTERPRET,
                     stamp_ptr, t, STAMPS)
            _stamp(stamp_ptr, t, 4, STAMPS)
            _signal(l2_full_ptr, mb, SIGNAL)
            _stamp(stamp_ptr, t, 5, STAMPS)
            t += 1
        else:
            if _wait(l2_full_ptr, mb, need, max_spins, POLL):
                _linear2_combine(act_ptr, act_desc, w2_ptr, w2_desc, out_ptr, dest_delta_ptr,
                                 row_token_ptr, row_slot_ptr, row_weight_ptr, scale_ptr, e,
                                 row0, rend, nb, H, I, E, TOPK, T_LOCAL, EP, BM, BN2, BK2,
                                 FP8, TMA, ACC_K2, NS2, INTERPRET, stamp_ptr, t, STAMPS, CMOD, EVICT)
                _stamp(stamp_ptr, t, 4, STAMPS)
                _stamp(stamp_ptr, t, 5, STAMPS)
                t += 1
            else:
                tl.atomic_xchg(err_ptr, 1)
                tl.atomic_xchg(err_ptr + 1, t + 1)
                t = end
        kind, e, mb, nb, row0, rend = nkind, ne, nmb, nnb, nrow0, nrend
        if stop != 0:
            t = end
    if CLK:
        tl.atomic_add(clock_ptr, _cycles(CLK) - clk0)
        tl.atomic_add(clock_ptr + 1, _now(CLK) - ns0)
