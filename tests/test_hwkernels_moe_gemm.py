"""The GEMM-only tables (pure numpy; the timed comparison itself needs the GPU)."""

import numpy as np

from hwkernels.moe_gemm import gemm_table


def test_grouped_table_holds_every_tile_once_in_raster_order():
    t = gemm_table(1, n_mblocks=10, nblocks=3, n_streams=4, l1_nblocks=2, group_m=4)
    assert t.offsets[-1] == len(t.tiles) == 30
    assert sorted(map(tuple, t.tiles[:, 2:].tolist())) == [(m, n) for m in range(10) for n in range(3)]
    assert set(t.tiles[:, 0].tolist()) == {1} and t.l1_nblocks == 2
    first = [tuple(t.tiles[t.offsets[s], 2:]) for s in range(4)]   # the tiles that start together
    assert first == [(0, 0), (1, 0), (2, 0), (3, 0)]                # one n-block, 4 m-blocks
    assert np.all(np.diff(t.offsets) >= 7)


def test_fewer_tiles_than_streams_leaves_no_empty_stream():
    t = gemm_table(0, n_mblocks=1, nblocks=2, n_streams=8, l1_nblocks=2)
    assert len(t.offsets) == 3 and t.offsets.tolist() == [0, 1, 2]
