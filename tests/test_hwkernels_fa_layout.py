"""Index math of the FA + A2A layout, exhaustively on small cases (pure python, no torch)."""

import itertools

import numpy as np
import pytest

from hwkernels import fa_layout as L

SMALL = [  # (batch, heads, seq_len, sp, block_m)
    (1, 2, 8, 2, 2), (2, 4, 16, 2, 4), (2, 4, 16, 4, 2), (1, 8, 32, 4, 8), (3, 6, 12, 3, 2),
    (1, 8, 64, 8, 8),
]
D = 4   # element math does not depend on d; small keeps the exhaustive sets small


@pytest.mark.parametrize("batch,heads,seq_len,sp,block_m", SMALL)
def test_every_owner_element_is_written_exactly_once_by_some_rank(batch, heads, seq_len, sp, block_m):
    size = L.slice_elems(batch, seq_len, heads, sp, D)
    hits = np.zeros((sp, size), dtype=np.int64)
    hl = heads // sp
    for rank in range(sp):
        for b, h, mb in L.tiles(batch, hl, seq_len, block_m):
            m0 = mb * block_m
            o = L.owner_of(m0, seq_len, sp)
            base = L.dest_offset(b, m0, h, rank, seq_len, heads, sp, D)
            for i, e in itertools.product(range(block_m), range(D)):
                hits[o, base + i * heads * D + e] += 1
    assert hits.min() == 1 and hits.max() == 1


@pytest.mark.parametrize("batch,heads,seq_len,sp,block_m", SMALL)
def test_dest_offset_matches_the_sequence_partitioned_transpose(batch, heads, seq_len, sp, block_m):
    # Global output [batch, H, M, d] -> owner o's [batch, M/N, H, d] is a transpose plus a slice.
    hl, tpo = heads // sp, seq_len // sp
    full = np.arange(batch * heads * seq_len * D).reshape(batch, heads, seq_len, D)
    owners = [full[:, :, o * tpo:(o + 1) * tpo, :].transpose(0, 2, 1, 3).ravel() for o in range(sp)]
    for rank in range(sp):
        for b, h, mb in L.tiles(batch, hl, seq_len, block_m):
            m0 = mb * block_m
            o = L.owner_of(m0, seq_len, sp)
            base = L.dest_offset(b, m0, h, rank, seq_len, heads, sp, D)
            for i in range(block_m):
                got = owners[o][base + i * heads * D: base + i * heads * D + D]
                assert list(got) == list(full[b, rank * hl + h, m0 + i, :])


def test_tiles_order_query_block_fastest_and_each_tile_once():
    got = list(L.tiles(2, 3, 8, 2))
    assert got[:5] == [(0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 0, 3), (0, 1, 0)]
    assert len(got) == len(set(got)) == L.n_tiles(2, 3, 8, 2) == 24
    assert [L.tile_coords(t, 3, 8, 2) for t in range(24)] == got


@pytest.mark.parametrize("programs,total", [(1, 5), (3, 7), (4, 4), (132, 100), (5, 23)])
def test_program_tiles_partition_every_tile(programs, total):
    seen = sorted(t for p in range(programs) for t in L.program_tiles(p, programs, total))
    assert seen == list(range(total))


def test_owner_of_boundaries():
    assert [L.owner_of(m, 16, 4) for m in (0, 3, 4, 7, 8, 15)] == [0, 0, 1, 1, 2, 3]
    with pytest.raises(ValueError, match='"m0" must be in'):
        L.owner_of(16, 16, 4)


@pytest.mark.parametrize("sp", [2, 3, 4, 8])
def test_remote_slot_is_a_bijection_onto_the_other_owners(sp):
    for rank in range(sp):
        slots = [L.remote_slot(o, rank, sp) for o in range(sp) if o != rank]
        assert slots == list(range(sp - 1))
        with pytest.raises(ValueError, match="differ from the rank"):
            L.remote_slot(rank, rank, sp)


def test_tile_bytes():
    assert L.tile_bytes(128, 128) == 32768
    assert L.tile_bytes(64, 128) == 16384


@pytest.mark.parametrize("kwargs,message", [
    (dict(heads=30, sp=4), r'"heads" \(30\) must be divisible by "sp" N \(4\)'),
    (dict(seq_len=1026, sp=4), r'"seq_len" M \(1026\) must be divisible by "sp" N \(4\)'),
    (dict(seq_len=1024, sp=4, block_m=512), r'must be divisible by the tile "block_m" \(512\)'),
    (dict(head_dim=96), r'"head_dim" must be one of \(64, 128\), got 96'),
    (dict(dtype="fp16"), r"\"dtype\" must be one of \('bf16',\), got 'fp16'"),
    (dict(batch=0), r'"batch" must be an integer >= 1, got 0'),
])
def test_check_shape_one_line_errors(kwargs, message):
    args = dict(batch=1, heads=32, seq_len=1024, head_dim=128, sp=4, block_m=128, dtype="bf16")
    args.update(kwargs)
    with pytest.raises(ValueError, match=message) as info:
        L.check_shape(**args)
    assert "\n" not in str(info.value)


def test_check_shape_accepts_the_sweep_shapes():
    for m in (1024, 3072, 65536):
        L.check_shape(1, 32, m, 128, 4, 128)
        L.check_shape(1, 16, m, 64, 8, 128)


def test_layout_module_imports_without_torch():
    import subprocess
    import sys
    from pathlib import Path

    code = "import sys, hwkernels.fa_layout; print('torch' in sys.modules, 'triton' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False False", out.stderr[-500:]


@pytest.mark.parametrize("batch,heads,seq_len,sp,block_m", SMALL)
def test_remote_first_order_is_a_permutation_with_the_ranks_tiles_last(batch, heads, seq_len, sp,
                                                                      block_m):
    hl = heads // sp
    every = list(L.tiles(batch, hl, seq_len, block_m))
    for rank in range(sp):
        order = [L.remote_first_coords(i, batch, hl, seq_len, block_m, sp, rank)
                 for i in range(len(every))]
        assert sorted(order) == sorted(every)
        owners = [L.owner_of(mb * block_m, seq_len, sp) for _, _, mb in order]
        n_local = len(every) // sp
        assert all(o != rank for o in owners[:-n_local]) and all(o == rank for o in owners[-n_local:])
        remote = [t for t in every if L.owner_of(t[2] * block_m, seq_len, sp) != rank]
        assert order[:-n_local] == remote          # remote tiles keep the tiles() order
    with pytest.raises(ValueError, match=r'"i" must be in'):
        L.remote_first_coords(len(every), batch, hl, seq_len, block_m, sp, 0)
