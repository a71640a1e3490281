"""The Gluon attention forward's epilogue (fa_gluon): a half tile to its owner, the
completion-coupled fence, the per-tile stamps. The same contract as fa_kernels' MODE 1 / 2 and
INSTR (FA_CONTRACT.md), written once more only because Gluon functions cannot call @triton.jit
ones.

Each consumer warpgroup of fa_gluon stores its own 64 rows of a 128-row tile, so the store is
per half tile (`half` = 0 or 64 rows into the tile); both halves have the same owner (a tile
never straddles two owners: fa_layout.check_shape).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def store_local(o, rows, cols, out_ptr, t, half):
    """FA-only: rows [t * 128 + half, + 64) of out [batch, HL, M, 128] (flat rows)."""
    r = (t * 128 + half + rows).to(gl.int64) * 128
    gl.store(out_ptr + gl.expand_dims(r, 1) + gl.expand_dims(cols, 0), o)


@gluon.jit
def store_to_owner(o, rows, cols, out_ptr, remote_ptr, delta_ptr, t, half, seq, n_tiles,
                   RANK: gl.constexpr, HL: gl.constexpr, SP: gl.constexpr, DELTA: gl.constexpr):
    """Fused: the half tile into its owner's [batch, M/N, H, 128] buffer (fa_layout.dest_offset):
    `out_ptr` when the owner is this rank, else `remote_ptr` (slot o - (o > rank) of
    slice_elems = batch * M/N * H * 128 each, or owner o's buffer at delta[o] with DELTA: N ranks
    over symmetric memory)."""
    m_blocks = seq // 128
    bh = t // m_blocks
    m0 = (t % m_blocks) * 128 + half
    b = bh // HL
    h = bh % HL
    tpo = seq // SP
    owner = m0 // tpo
    heads: gl.constexpr = HL * SP
    base = ((b * tpo + m0 - owner * tpo).to(gl.int64) * heads + RANK * HL + h) * 128
    offs = gl.expand_dims(rows.to(gl.int64) * (heads * 128), 1) + gl.expand_dims(cols, 0)
    if owner == RANK:
        gl.store(out_ptr + base + offs, o)
    else:
        if DELTA:
            off = gl.multiple_of(gl.load(delta_ptr + owner), 8) + base   # 16 B (fa_dist checks)
        else:
            slice_elems = (n_tiles // (HL * m_blocks)).to(gl.int64) * tpo * (heads * 128)
            off = (owner - (owner > RANK).to(gl.int32)).to(gl.int64) * slice_elems + base
        gl.store(remote_ptr + off + offs, o)


@gluon.jit
def fence_sc_sys():
    """Completion coupling: this thread's stores visible at system scope before it goes on."""
    gl.inline_asm_elementwise("fence.sc.sys;\n\tmov.u32 $0, 0;", "=r", [], dtype=gl.int32,
                              is_pure=False, pack=1)


@gluon.jit
def stamp(stamps_ptr, t, slot: gl.constexpr):
    """Stamp `slot` (0 tile start, 1 Q-loop end, 2 stores issued) of tile t: %globaltimer ns at
    word slot, %clock64 at word 3 + slot (fa_variants.tile_times reads them)."""
    ns = gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=gl.int64,
                                   is_pure=False, pack=1)
    clk = gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=gl.int64,
                                    is_pure=False, pack=1)
    row = stamps_ptr + t.to(gl.int64) * 6
    gl.store(row + slot, ns)
    gl.store(row + 3 + slot, clk)
