"""The Gluon attention forward with FA3's structure: FA-only, fused, completion-coupled, paced.

Launchers: fa_gluon_launch (gluon_fa, launch_gluon_fa: fa.launch_fa's contract); compiled for
sm_90 on the CPU with its SASS facts: fa_gluon_sass; the epilogues: fa_gluon_epi.
MODE 0 FA-only, 1 fused, 2 completion-coupled, 3 fused-paced (a remote half tile staged in HBM,
its 8 row chunks stored after KV steps 0, PSTRIDE, 2 PSTRIDE, ... of the warpgroup's next
Q-loop, the rest at its end; tiles in ORDER 1, remote-first); fa_bench --mainloop gluon, runs 7
and 8 in docs/fa-a2a.md. INSTR: consumer 0's per-tile stamps; CLK: consumer 0's SM cycles and
nanoseconds from its first tile to its exit added to clock_ptr[0:2] (the timed run's own clock);
STAGGER_NS: program p's consumers start STAGGER_NS * p / programs late (staggered phases);
STORE16: 16 B output stores
(launch_gluon_fa, at 2 stages); gluon_fa is the explored FA-only launch (3 stages, 4 B stores).
Persistent (grid = min(SMs, tiles)), tiles of b_m = 128 query rows in the shipped order
(`fa_layout`: query block fastest), b_n = 128. Three partitions (gl.warp_specialize):
  consumer 0 (the default partition, 4 warps) and consumer 1 (4 warps): rows 0-63 and 64-127 of
      the tile, each its own warpgroup: S = Q K^T with Q from shared memory, P V with P from
      registers, the online softmax in base 2, the normalized output stored from registers;
  producer (1 warp, 24 registers): TMA loads of each tile's two Q halves and the K/V ring
      (STAGES slots for K and for V, separate ready/empty mbarriers, K_{j+1} issued before V_j).
OVERLAP 0: S_j, softmax, P_j V_j in series (wgmma waited at once). OVERLAP 1 (FA3's
intra-warpgroup overlap): step j issues S_j, then P_{j-1} V_{j-1}, waits for S_j only
(`warpgroup_mma_wait(1)`), runs the softmax of S_j while P_{j-1} V_{j-1} is on the tensor cores,
then waits for it with P_{j-1} among the wait's deps (its registers stay live: the hazard that the
Triton SWP kernel of fa_qloop had to work around) and rescales acc by alpha_j. OVERLAP 2: also a
wait predicated on the row sums before Gluon's (`_wait_after`): ptxas hoists Gluon's wait above
the softmax otherwise (SASS: the exp2s land after it).
PINGPONG 1 (FA3's inter-warpgroup schedule): the two consumers take turns issuing their wgmmas,
ordered by two mbarriers (consumer w waits for its turn before issuing S_j (and P_{j-1} V_{j-1})
and hands the turn over right after issuing), so one warpgroup's softmax runs under the other's
wgmmas.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from . import fa_gluon_epi as epi

LOG2E = 1.4426950408889634
BM, BN, D, HALF = 128, 128, 128, 64


@gluon.jit
def _producer(q_desc, k_desc, v_desc, bars, q_smem, k_smem, v_smem, seq, n_tiles,
              STAGES: gl.constexpr, ORDER: gl.constexpr, RANK: gl.constexpr, SP: gl.constexpr):
    q_ready, q_empty, k_ready, k_empty, v_ready, v_empty, turn = bars
    n_kv = seq // 128
    c = 0
    it = 0
    for t in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
        bh, mb = epi.tile_coords(t, seq, n_tiles, ORDER, RANK, SP)
        row0 = (bh * n_kv + mb) * 128          # q, k, v rows: (b*h) * M + m
        kv0 = bh * seq
        for w in gl.static_range(2):
            mbarrier.wait(q_empty.index(w), (it & 1) ^ 1)
            mbarrier.expect(q_ready.index(w), q_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(q_desc, [row0 + w * 64, 0], q_ready.index(w),
                                            q_smem.index(w))
        s = c % STAGES
        mbarrier.wait(k_empty.index(s), ((c // STAGES) & 1) ^ 1)
        mbarrier.expect(k_ready.index(s), k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [kv0, 0], k_ready.index(s), k_smem.index(s))
        for j in range(n_kv):
            cj = c + j
            if j + 1 < n_kv:
                s1 = (cj + 1) % STAGES
                mbarrier.wait(k_empty.index(s1), (((cj + 1) // STAGES) & 1) ^ 1)
                mbarrier.expect(k_ready.index(s1), k_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(k_desc, [kv0 + (j + 1) * 128, 0],
                                                k_ready.index(s1), k_smem.index(s1))
            s = cj % STAGES
            mbarrier.wait(v_empty.index(s), ((cj // STAGES) & 1) ^ 1)
            mbarrier.expect(v_ready.index(s), v_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(v_desc, [kv0 + j * 128, 0], v_ready.index(s),
                                            v_smem.index(s))
        c += n_kv
        it += 1


@gluon.jit
def _softmax(s, m_i, l_i, qk_scale):
    """Online softmax step in base 2 (qk_scale includes log2 e): P, the new max and row sum, alpha."""
    m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
    alpha = gl.exp2(m_i - m_new)
    p = gl.exp2(s * qk_scale - gl.expand_dims(m_new, 1))
    l_new = l_i * alpha + gl.sum(p, axis=1)
    return p, m_new, l_new, alpha


@gluon.jit
def _wait_after(l_i):
    """wgmma.wait_group 0 predicated on the row sums (l >= 0: true at run time), so ptxas cannot
    hoist the wait for P_{j-1} V_{j-1} above the softmax of S_j (it does with Gluon's own wait)."""
    return gl.inline_asm_elementwise(
        "{ .reg .pred p; setp.ge.f32 p, $1, 0f00000000; @p wgmma.wait_group.sync.aligned 0; "
        "mov.b32 $0, $1; }", "=r,r", [l_i], dtype=gl.float32, is_pure=False, pack=1)


@gluon.jit
def _turn_wait(turn, w: gl.constexpr, n, PINGPONG: gl.constexpr):
    if PINGPONG:
        mbarrier.wait(turn.index(w), n & 1)


@gluon.jit
def _turn_pass(turn, w: gl.constexpr, PINGPONG: gl.constexpr):
    if PINGPONG:
        mbarrier.arrive(turn.index(1 - w), count=1)


@gluon.jit
def _consumer(bars, q_smem, k_smem, v_smem, out_ptr, remote_ptr, delta_ptr, stamps_ptr, stage_ptr,
              clock_ptr, qk_scale, seq, n_tiles, W: gl.constexpr, STAGES: gl.constexpr,
              OVERLAP: gl.constexpr, PINGPONG: gl.constexpr, MODE: gl.constexpr,
              INSTR: gl.constexpr, CLK: gl.constexpr, STAGGER_NS: gl.constexpr,
              DELTA: gl.constexpr, STORE16: gl.constexpr,
              RANK: gl.constexpr, HL: gl.constexpr, SP: gl.constexpr, ORDER: gl.constexpr,
              PSTRIDE: gl.constexpr):
    q_ready, q_empty, k_ready, k_empty, v_ready, v_empty, turn = bars
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                  instr_shape=[16, 128, 16])
    dot_a: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma, k_width=2)
    row_l: gl.constexpr = gl.SliceLayout(1, mma)
    # STORE16: the output converted to 8 consecutive columns (16 B) per thread, 8 threads on
    # one 256 B row, before its stores (else 4 B stores from the MMA layout: 16 B of each of 8
    # rows per warp store); the conversion goes through shared memory (3 stages leave too little)
    st_l: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    # MODE 3: an 8-row chunk of the staged half tile, 16 B per thread, no replication
    ch_l: gl.constexpr = gl.BlockedLayout([1, 8], [2, 16], [4, 1], [1, 0])
    crow = gl.arange(0, 8, gl.SliceLayout(1, ch_l))
    ccol = gl.arange(0, 128, gl.SliceLayout(0, ch_l))
    stage_w = stage_ptr + (gl.program_id(0) * 128 + W * 64).to(gl.int64) * 128
    pend = gl.program_id(0) * 0                       # MODE 3: the stage holds a remote tile
    pend_off = (gl.program_id(0) * 0).to(gl.int64)    # ... and its offset from the remote base
    n_kv = seq // 128
    zero = gl.zeros([64, 128], gl.float32, mma)
    c = 0
    it = 0
    nt = 0                                   # this consumer's turns taken (PINGPONG)
    if STAGGER_NS > 0:                       # program p begins STAGGER_NS * p / programs late
        t0, _c = epi.timers()
        until = t0 + (gl.program_id(0).to(gl.int64) * STAGGER_NS) // gl.num_programs(0)
        now = t0
        while now < until:
            now, _c = epi.timers()
    if CLK and W == 0:
        ns0, clk0 = epi.timers()
    for t in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
        if INSTR and W == 0:
            epi.stamp(stamps_ptr, t, 0)
        bh, mb = epi.tile_coords(t, seq, n_tiles, ORDER, RANK, SP)
        mbarrier.wait(q_ready.index(W), it & 1)
        q = q_smem.index(W)
        m_i = gl.full([64], float("-inf"), gl.float32, row_l)
        l_i = gl.zeros([64], gl.float32, row_l)
        acc = gl.zeros([64, 128], gl.float32, mma)
        # step 0: S_0 and its softmax
        s = c % STAGES
        mbarrier.wait(k_ready.index(s), (c // STAGES) & 1)
        _turn_wait(turn, W, nt, PINGPONG)
        s_tok = warpgroup_mma(q, k_smem.index(s).permute((1, 0)), zero, use_acc=False,
                              is_async=True)
        _turn_pass(turn, W, PINGPONG)
        nt += 1
        sc = warpgroup_mma_wait(0, deps=[s_tok])
        mbarrier.arrive(k_empty.index(s), count=1)
        p, m_i, l_i, alpha = _softmax(sc, m_i, l_i, qk_scale)
        p_op = gl.convert_layout(p.to(gl.bfloat16), dot_a)
        if MODE == 3:           # chunk 0 of the previous (staged) tile after KV step 0
            if pend != 0:
                epi.store_chunk(stage_w, remote_ptr, pend_off, 0, crow, ccol, HL * SP)
        for j in range(1, n_kv):
            cj = c + j
            s = cj % STAGES
            sp = (cj - 1) % STAGES
            mbarrier.wait(k_ready.index(s), (cj // STAGES) & 1)
            if OVERLAP:
                mbarrier.wait(v_ready.index(sp), ((cj - 1) // STAGES) & 1)
                _turn_wait(turn, W, nt, PINGPONG)
                s_tok = warpgroup_mma(q, k_smem.index(s).permute((1, 0)), zero, use_acc=False,
                                      is_async=True)
                o_tok = warpgroup_mma(p_op, v_smem.index(sp), acc, is_async=True)
                _turn_pass(turn, W, PINGPONG)
                nt += 1
                sc = warpgroup_mma_wait(1, deps=[s_tok])
                mbarrier.arrive(k_empty.index(s), count=1)
                p, m_i, l_i, alpha = _softmax(sc, m_i, l_i, qk_scale)
                if OVERLAP == 2:
                    l_i = _wait_after(l_i)
                acc, p_op = warpgroup_mma_wait(0, deps=[o_tok, p_op])
                mbarrier.arrive(v_empty.index(sp), count=1)
                acc = acc * gl.expand_dims(alpha, 1)
                p_op = gl.convert_layout(p.to(gl.bfloat16), dot_a)
            else:
                mbarrier.wait(v_ready.index(sp), ((cj - 1) // STAGES) & 1)
                _turn_wait(turn, W, nt, PINGPONG)
                o_tok = warpgroup_mma(p_op, v_smem.index(sp), acc, is_async=True)
                s_tok = warpgroup_mma(q, k_smem.index(s).permute((1, 0)), zero, use_acc=False,
                                      is_async=True)
                _turn_pass(turn, W, PINGPONG)
                nt += 1
                acc, sc, p_op = warpgroup_mma_wait(0, deps=[o_tok, s_tok, p_op])
                mbarrier.arrive(v_empty.index(sp), count=1)
                mbarrier.arrive(k_empty.index(s), count=1)
                p, m_i, l_i, alpha = _softmax(sc, m_i, l_i, qk_scale)
                acc = acc * gl.expand_dims(alpha, 1)
                p_op = gl.convert_layout(p.to(gl.bfloat16), dot_a)
            if MODE == 3:       # chunk c after KV step c * PSTRIDE (a uniform branch)
                if (pend != 0) & (j % PSTRIDE == 0) & (j // PSTRIDE < 8):
                    epi.store_chunk(stage_w, remote_ptr, pend_off, j // PSTRIDE, crow, ccol,
                                    HL * SP)
        mbarrier.arrive(q_empty.index(W), count=1)        # Q read by the tile's last S
        cl = c + n_kv - 1
        sl = cl % STAGES
        mbarrier.wait(v_ready.index(sl), (cl // STAGES) & 1)
        _turn_wait(turn, W, nt, PINGPONG)
        o_tok = warpgroup_mma(p_op, v_smem.index(sl), acc, is_async=True)
        _turn_pass(turn, W, PINGPONG)
        nt += 1
        acc, p_op = warpgroup_mma_wait(0, deps=[o_tok, p_op])
        mbarrier.arrive(v_empty.index(sl), count=1)
        if INSTR and W == 0:
            epi.stamp(stamps_ptr, t, 1)
        o = (acc / gl.expand_dims(l_i, 1)).to(gl.bfloat16)
        if STORE16:
            o = gl.convert_layout(o, st_l)
            rows = gl.arange(0, 64, gl.SliceLayout(1, st_l))
            cols = gl.arange(0, 128, gl.SliceLayout(0, st_l))
        else:
            rows = gl.arange(0, 64, row_l)
            cols = gl.arange(0, 128, gl.SliceLayout(0, mma))
        if MODE == 0:
            epi.store_local(o, rows, cols, out_ptr, bh, mb, W * 64, seq)
        else:
            local, base, roff = epi.owner_dest(delta_ptr, bh, mb, W * 64, seq, n_tiles, RANK, HL,
                                               SP, DELTA)
            if MODE == 3:
                if pend != 0:   # the chunks this Q-loop was too short for
                    for cc in range(gl.minimum((n_kv + PSTRIDE - 1) // PSTRIDE, 8), 8):
                        epi.store_chunk(stage_w, remote_ptr, pend_off, cc, crow, ccol, HL * SP)
                gl.thread_barrier()             # the warpgroup's chunk reads done
                if local:       # the rank's own tile to HBM at once, a remote one staged
                    epi.store_to_owner(o, rows, cols, out_ptr, remote_ptr, local, base, roff,
                                       HL * SP)
                    pend = gl.program_id(0) * 0
                else:
                    gl.store(stage_w + gl.expand_dims(rows * 128, 1) + gl.expand_dims(cols, 0), o)
                    pend = gl.program_id(0) * 0 + 1
                pend_off = roff
                gl.thread_barrier()             # the stage written before any chunk reads it
            else:
                epi.store_to_owner(o, rows, cols, out_ptr, remote_ptr, local, base, roff,
                                   HL * SP)
        if MODE == 2:
            epi.fence_sc_sys()
        if INSTR and W == 0:
            gl.thread_barrier()                # the warpgroup's stores issued (fenced: MODE 2)
            epi.stamp(stamps_ptr, t, 2)
        c += n_kv
        it += 1
    if MODE == 3:               # the program's last staged tile
        if pend != 0:
            for cc in range(8):
                epi.store_chunk(stage_w, remote_ptr, pend_off, cc, crow, ccol, HL * SP)
    if CLK and W == 0:
        epi.clock_add(clock_ptr, ns0, clk0)


@gluon.jit
def _consumer1(bars, q_smem, k_smem, v_smem, out_ptr, remote_ptr, delta_ptr, stamps_ptr, stage_ptr,
               clock_ptr, qk_scale, seq, n_tiles, STAGES: gl.constexpr, OVERLAP: gl.constexpr,
               PINGPONG: gl.constexpr, MODE: gl.constexpr, INSTR: gl.constexpr,
               CLK: gl.constexpr, STAGGER_NS: gl.constexpr, DELTA: gl.constexpr,
               STORE16: gl.constexpr, RANK: gl.constexpr, HL: gl.constexpr,
               SP: gl.constexpr, ORDER: gl.constexpr, PSTRIDE: gl.constexpr):
    _consumer(bars, q_smem, k_smem, v_smem, out_ptr, remote_ptr, delta_ptr, stamps_ptr, stage_ptr,
              clock_ptr, qk_scale, seq, n_tiles, 1, STAGES, OVERLAP, PINGPONG, MODE, INSTR, CLK,
              STAGGER_NS, DELTA, STORE16,
              RANK, HL, SP, ORDER, PSTRIDE)


@gluon.jit
def gluon_fa_kernel(q_desc, k_desc, v_desc, out_ptr, remote_ptr, delta_ptr, stamps_ptr, stage_ptr,
                    clock_ptr, qk_scale, seq, n_tiles,
                    STAGES: gl.constexpr, OVERLAP: gl.constexpr, PINGPONG: gl.constexpr,
                    MODE: gl.constexpr = 0, INSTR: gl.constexpr = False, CLK: gl.constexpr = False,
                    STAGGER_NS: gl.constexpr = 0,
                    DELTA: gl.constexpr = False, STORE16: gl.constexpr = False,
                    RANK: gl.constexpr = 0, HL: gl.constexpr = 1, SP: gl.constexpr = 1,
                    ORDER: gl.constexpr = 0, PSTRIDE: gl.constexpr = 1):
    # RANK, HL, SP are constexprs and the pointers flat arguments of the partitions: passed in
    # one tuple with the pointers (Triton 3.6), the integers arrived wrong in the consumer-1
    # partition (H200, compute-sanitizer: out-of-bounds remote stores with a zero row stride)
    q_smem = gl.allocate_shared_memory(gl.bfloat16, [2, 64, 128], q_desc.layout)
    k_smem = gl.allocate_shared_memory(gl.bfloat16, [STAGES, 128, 128], k_desc.layout)
    v_smem = gl.allocate_shared_memory(gl.bfloat16, [STAGES, 128, 128], v_desc.layout)
    bl: gl.constexpr = mbarrier.MBarrierLayout()
    q_ready = gl.allocate_shared_memory(gl.int64, [2, 1], bl)
    q_empty = gl.allocate_shared_memory(gl.int64, [2, 1], bl)
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], bl)
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bl)
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bl)
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bl)
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bl)
    for i in gl.static_range(2):
        mbarrier.init(q_ready.index(i), count=1)
        mbarrier.init(q_empty.index(i), count=1)
        mbarrier.init(turn.index(i), count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(v_empty.index(i), count=2)
    if PINGPONG:
        mbarrier.arrive(turn.index(0), count=1)          # consumer 0 takes the first turn
    bars = (q_ready, q_empty, k_ready, k_empty, v_ready, v_empty, turn)
    gl.warp_specialize([
        (_consumer, (bars, q_smem, k_smem, v_smem, out_ptr, remote_ptr, delta_ptr, stamps_ptr,
                     stage_ptr, clock_ptr, qk_scale, seq, n_tiles, 0, STAGES, OVERLAP, PINGPONG,
                     MODE, INSTR, CLK, STAGGER_NS, DELTA, STORE16, RANK, HL, SP, ORDER, PSTRIDE)),
        (_consumer1, (bars, q_smem, k_smem, v_smem, out_ptr, remote_ptr, delta_ptr, stamps_ptr,
                      stage_ptr, clock_ptr, qk_scale, seq, n_tiles, STAGES, OVERLAP, PINGPONG, MODE,
                      INSTR, CLK, STAGGER_NS, DELTA, STORE16, RANK, HL, SP, ORDER, PSTRIDE)),
        (_producer, (q_desc, k_desc, v_desc, bars, q_smem, k_smem, v_smem, seq, n_tiles,
                     STAGES, ORDER, RANK, SP)),
    ], [4, 1], [240, 24])


def _layouts():
    return (gl.NVMMASharedLayout.get_default_for([64, 128], gl.bfloat16),
            gl.NVMMASharedLayout.get_default_for([128, 128], gl.bfloat16))
