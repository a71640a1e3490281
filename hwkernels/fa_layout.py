"""Index math of the Ulysses FA + post-attention A2A layout (pure python, no torch).

Ulysses SP = N: after the pre-attention A2A, rank r holds q, k, v as [batch, H/N, M, d]
(all M tokens, heads r*H/N .. (r+1)*H/N - 1). The attention output must end
sequence-partitioned: owner o holds [batch, M/N, H, d] (tokens o*M/N .. (o+1)*M/N - 1, all H
heads). Rank r's output tile (batch b, local head h, query rows m0 .. m0+b_m-1) belongs to
owner o = m0 // (M/N) and lands at [b, m0 - o*M/N, r*H/N + h, :] of o's buffer: b_m rows of
d elements, row stride H*d elements.

The persistent kernels (fa_kernels.py) enumerate output tiles t = 0 .. n_tiles-1 with the
query block fastest, so the programs in flight at once share (b, h) and their K/V tiles:
    t = (b * heads_local + h) * (M // b_m) + m_block.
The simulator's attention builder uses the same functions (no torch needed).
"""

HEAD_DIMS = (64, 128)
DTYPES = ("bf16",)


def check_shape(batch: int, heads: int, seq_len: int, head_dim: int, sp: int, block_m: int,
                dtype: str = "bf16") -> None:
    """Raise ValueError (one line) unless the shape is one the kernels support."""
    for name, value in (("batch", batch), ("heads", heads), ("seq_len", seq_len),
                        ("sp", sp), ("block_m", block_m)):
        if int(value) != value or value < 1:
            raise ValueError(f'"{name}" must be an integer >= 1, got {value!r}.')
    if head_dim not in HEAD_DIMS:
        raise ValueError(f'"head_dim" must be one of {HEAD_DIMS}, got {head_dim!r}.')
    if dtype not in DTYPES:
        raise ValueError(f'"dtype" must be one of {DTYPES}, got {dtype!r}.')
    if heads % sp:
        raise ValueError(f'"heads" ({heads}) must be divisible by "sp" N ({sp}).')
    if seq_len % sp:
        raise ValueError(f'"seq_len" M ({seq_len}) must be divisible by "sp" N ({sp}).')
    if (seq_len // sp) % block_m:
        raise ValueError(f'"seq_len" M / N ({seq_len // sp}) must be divisible by the tile '
                         f'"block_m" ({block_m}): a tile must not straddle two owners.')


def owner_of(m0: int, seq_len: int, sp: int) -> int:
    """Owner of query row m0 (the first row of a tile): m0 // (M/N)."""
    if not 0 <= m0 < seq_len:
        raise ValueError(f'"m0" must be in [0, {seq_len}), got {m0}.')
    return m0 // (seq_len // sp)


def dest_offset(b: int, m0: int, h: int, rank: int, seq_len: int, heads: int, sp: int,
                head_dim: int) -> int:
    """Element offset of row m0, local head h, element 0 inside owner_of(m0)'s buffer.

    Owner o's buffer is [batch, M/N, H, d] contiguous; rank r's local head h is global head
    r*H/N + h. Row m0+i of the tile is at dest_offset(...) + i*H*d.
    """
    heads_local = heads // sp
    if not 0 <= h < heads_local:
        raise ValueError(f'"h" must be in [0, {heads_local}), got {h}.')
    if not 0 <= rank < sp:
        raise ValueError(f'"rank" must be in [0, {sp}), got {rank}.')
    tokens_per_owner = seq_len // sp
    o = owner_of(m0, seq_len, sp)
    row = b * tokens_per_owner + (m0 - o * tokens_per_owner)
    return (row * heads + rank * heads_local + h) * head_dim


def n_tiles(batch: int, heads_local: int, seq_len: int, block_m: int) -> int:
    return batch * heads_local * (seq_len // block_m)


def tile_coords(t: int, heads_local: int, seq_len: int, block_m: int) -> tuple[int, int, int]:
    """(b, h, m_block) of tile t in the persistent kernels' order (m_block fastest)."""
    m_blocks = seq_len // block_m
    bh, m_block = divmod(t, m_blocks)
    b, h = divmod(bh, heads_local)
    return b, h, m_block


def tiles(batch: int, heads_local: int, seq_len: int, block_m: int):
    """Every output tile as (b, h, m_block), in the order the persistent kernels take them."""
    for t in range(n_tiles(batch, heads_local, seq_len, block_m)):
        yield tile_coords(t, heads_local, seq_len, block_m)


def remote_first_coords(i: int, batch: int, heads_local: int, seq_len: int, block_m: int,
                        sp: int, rank: int) -> tuple[int, int, int]:
    """(b, h, m_block) of position i in the remote-first order (the kernels' ORDER 1): the tiles
    owned by other ranks first, in tiles() order, then the rank's own tiles, in tiles() order.
    The last wave of a persistent kernel then stores to local HBM only."""
    m_blocks = seq_len // block_m
    per_owner = m_blocks // sp
    total = n_tiles(batch, heads_local, seq_len, block_m)
    n_remote = total - total // sp
    if not 0 <= i < total:
        raise ValueError(f'"i" must be in [0, {total}), got {i}.')
    if i < n_remote:
        bh, j = divmod(i, m_blocks - per_owner)
        m_block = j + per_owner if j >= rank * per_owner else j
    else:
        bh, j = divmod(i - n_remote, per_owner)
        m_block = rank * per_owner + j
    b, h = divmod(bh, heads_local)
    return b, h, m_block


def program_tiles(pid: int, programs: int, total_tiles: int) -> range:
    """Tiles program pid takes: pid, pid + programs, ... (the persistent grid-stride loop)."""
    return range(pid, total_tiles, programs)


def slice_elems(batch: int, seq_len: int, heads: int, sp: int, head_dim: int) -> int:
    """Elements of one owner's buffer [batch, M/N, H, d]."""
    return batch * (seq_len // sp) * heads * head_dim


def remote_slot(owner: int, rank: int, sp: int) -> int:
    """Slot of `owner` in the rank's remote (host) buffer: the N-1 owners other than the rank,
    in owner order (owner == rank has no slot: its slice stays in local HBM)."""
    if owner == rank or not 0 <= owner < sp:
        raise ValueError(f'"owner" must be in [0, {sp}) and differ from the rank {rank}, got {owner}.')
    return owner if owner < rank else owner - 1


def tile_bytes(block_m: int, head_dim: int, elem_bytes: int = 2) -> int:
    """Bytes one output tile stores at its boundary (b_m * d * s_out)."""
    return block_m * head_dim * elem_bytes
