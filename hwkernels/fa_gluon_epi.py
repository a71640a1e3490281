"""The Gluon attention forward's epilogue (fa_gluon): the tile order, a half tile to its owner,
the paced row chunks, the completion-coupled fence, the per-tile stamps and the
run clock (CLK). The same contract as
fa_kernels' ORDER, MODE 1 / 2 / 3 and INSTR, written once more only because Gluon functions
cannot call @triton.jit ones.

Each consumer warpgroup of fa_gluon stores its own 64 rows of a 128-row tile, so the store is
per half tile (`half` = 0 or 64 rows into the tile); both halves have the same owner (a tile
never straddles two owners: fa_layout.check_shape).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def tile_coords(i, seq, n_tiles, ORDER: gl.constexpr, RANK: gl.constexpr, SP: gl.constexpr):
    """(b * HL + h, m_block) of the program's i-th tile position: ORDER 0 fa_layout.tiles (query
    block fastest), 1 fa_layout.remote_first_coords (the other owners' tiles first)."""
    m_blocks = seq // 128
    if ORDER == 0:
        bh = i // m_blocks
        mb = i % m_blocks
    else:
        per_owner = m_blocks // SP
        n_remote = n_tiles - n_tiles // SP
        if i < n_remote:
            bh = i // (m_blocks - per_owner)
            j = i % (m_blocks - per_owner)
            mb = j + (j >= RANK * per_owner).to(gl.int32) * per_owner
        else:
            bh = (i - n_remote) // per_owner
            mb = RANK * per_owner + (i - n_remote) % per_owner
    return bh, mb


@gluon.jit
def store_local(o, rows, cols, out_ptr, bh, mb, half, seq):
    """FA-only: rows [m_block * 128 + half, + 64) of (b, h) in out [batch, HL, M, 128]."""
    r = ((bh * (seq // 128) + mb) * 128 + half + rows).to(gl.int64) * 128
    gl.store(out_ptr + gl.expand_dims(r, 1) + gl.expand_dims(cols, 0), o)


@gluon.jit
def owner_dest(delta_ptr, bh, mb, half, seq, n_tiles, RANK: gl.constexpr, HL: gl.constexpr,
               SP: gl.constexpr, DELTA: gl.constexpr):
    """Where the half tile goes (fa_layout.dest_offset): (owner == rank, its element offset in
    the rank's own [batch, M/N, H, 128] buffer, its offset from the remote base: slot
    o - (o > rank) of slice_elems = batch * M/N * H * 128 each, or owner o's buffer at delta[o]
    with DELTA, N ranks over symmetric memory)."""
    b = bh // HL
    h = bh % HL
    tpo = seq // SP
    m0 = mb * 128 + half
    owner = m0 // tpo
    heads: gl.constexpr = HL * SP
    base = ((b * tpo + m0 - owner * tpo).to(gl.int64) * heads + RANK * HL + h) * 128
    if DELTA:
        roff = gl.multiple_of(gl.load(delta_ptr + owner), 8) + base   # 16 B (fa_dist checks)
    else:
        slice_elems = (n_tiles // (HL * (seq // 128))).to(gl.int64) * tpo * (heads * 128)
        roff = (owner - (owner > RANK).to(gl.int32)).to(gl.int64) * slice_elems + base
    return owner == RANK, base, roff


@gluon.jit
def store_to_owner(o, rows, cols, out_ptr, remote_ptr, local, base, roff, HEADS: gl.constexpr):
    """Fused: the half tile to its owner (owner_dest's result), HEADS * 128 elements per row."""
    offs = gl.expand_dims(rows.to(gl.int64) * (HEADS * 128), 1) + gl.expand_dims(cols, 0)
    if local:
        gl.store(out_ptr + base + offs, o)
    else:
        gl.store(remote_ptr + roff + offs, o)


@gluon.jit
def store_chunk(stage_w, remote_ptr, pend_off, c, crow, ccol, HEADS: gl.constexpr):
    """Fused-paced: rows [8 c, 8 c + 8) of the warpgroup's staged half tile (64 x 128 in HBM at
    stage_w) to its remote owner at pend_off (crow, ccol: an [8, 128] layout's aranges)."""
    r = c * 8 + crow
    src = stage_w + gl.expand_dims(r * 128, 1) + gl.expand_dims(ccol, 0)
    dst = (remote_ptr + pend_off + gl.expand_dims(r.to(gl.int64) * (HEADS * 128), 1)
           + gl.expand_dims(ccol, 0))
    gl.store(dst, gl.load(src, cache_modifier=".cg"))


@gluon.jit
def fence_sc_sys():
    """Completion coupling: this thread's stores visible at system scope before it goes on."""
    gl.inline_asm_elementwise("fence.sc.sys;\n\tmov.u32 $0, 0;", "=r", [], dtype=gl.int32,
                              is_pure=False, pack=1)


@gluon.jit
def timers():
    """(%globaltimer ns, %clock64) of this thread, now."""
    ns = gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=gl.int64,
                                   is_pure=False, pack=1)
    clk = gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=gl.int64,
                                    is_pure=False, pack=1)
    return ns, clk


@gluon.jit
def stamp(stamps_ptr, t, slot: gl.constexpr):
    """Stamp `slot` (0 tile start, 1 Q-loop end, 2 stores issued) of tile t: %globaltimer ns at
    word slot, %clock64 at word 3 + slot (fa_variants.tile_times reads them)."""
    ns, clk = timers()
    row = stamps_ptr + t.to(gl.int64) * 6
    gl.store(row + slot, ns)
    gl.store(row + 3 + slot, clk)


@gluon.jit
def clock_add(clock_ptr, ns0, clk0):
    """CLK: add this warpgroup's SM cycles (word 0) and nanoseconds (word 1) since (ns0, clk0)
    to the launch's sums; their ratio is the mean SM clock of the timed run itself
    (fa_variants.Case.run_clock_mhz), whatever number of threads adds the same pair."""
    ns1, clk1 = timers()
    gl.atomic_add(clock_ptr, clk1 - clk0)
    gl.atomic_add(clock_ptr + 1, ns1 - ns0)
