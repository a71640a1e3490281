"""hwkernels.moe_floor's tables (CPU): every tile on one program, none elsewhere."""

import numpy as np

from hwkernels.moe_floor import _table


def test_empty_table_has_no_tile_on_any_program():
    t = _table(np.zeros((0, 4), np.int32), 132, 6)
    assert len(t.offsets) == 133 and not t.offsets.any()
    assert t.tiles.shape == (1, 4)          # a placeholder row the kernel never reads


def test_one_tile_table_puts_it_on_the_chosen_program_only():
    tile = np.array([[0, 0, 3, 5]], np.int32)
    t = _table(tile, 132, 6, on_program=7)
    counts = np.diff(t.offsets)
    assert counts[7] == 1 and counts.sum() == 1
    assert (t.tiles == tile).all() and t.l1_nblocks == 6
