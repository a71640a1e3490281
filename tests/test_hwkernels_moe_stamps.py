"""The fused MoE kernel's stamps as per-tile times (pure numpy)."""

import numpy as np
import pytest

from hwkernels.moe_stamps import tile_times


def test_tile_times_columns():
    stamps = np.array([[100, 1100, 5100, 5600, 9600, 9800],
                       [0, 0, 2000, 2500, 2600, 7600]], np.int64)
    tiles = np.array([(1, 0, 0, 0), (0, 0, 0, 0)], np.int32)
    t = tile_times(stamps, tiles)
    assert t.wait_us.tolist() == [1.0, 0.0]
    assert t.mainloop_us.tolist() == [4.0, 2.0]
    assert t.epilogue_us.tolist() == [0.5, 0.5]
    assert t.store_us.tolist() == [4.0, 0.1]
    assert t.signal_us.tolist() == [0.2, 5.0]
    assert t.of(1, "store_us").tolist() == [4.0]
    assert t.start_us.tolist() == [0.1, 0.0]
    assert t.tiles_span_us == pytest.approx(9.8)
    assert np.isnan(t.gap_us).all() and t.of(0, "gap_us").size == 0   # no offsets: no gaps
    with pytest.raises(ValueError, match="not increasing"):
        tile_times(stamps[:, ::-1], tiles)


def test_gaps_are_per_program():
    # program 0 runs tiles 0, 1; program 1 runs tile 2; program 2 runs nothing
    stamps = np.array([[0, 1, 2, 3, 4, 5],
                       [8, 9, 10, 11, 12, 13],
                       [2, 3, 4, 5, 6, 7]], np.int64) * 1000
    tiles = np.array([(0, 0, 0, 0), (1, 0, 0, 0), (1, 0, 0, 1)], np.int32)
    t = tile_times(stamps, tiles, offsets=np.array([0, 2, 3, 3]))
    assert np.isnan(t.gap_us[0]) and np.isnan(t.gap_us[2])
    assert t.gap_us[1] == pytest.approx(3.0)          # tile 0 ended at 5, tile 1 began at 8
    assert t.of(1, "gap_us").tolist() == [3.0]         # NaNs (first tiles) left out
    assert t.tiles_span_us == pytest.approx(13.0)


def test_overlapping_tiles_of_one_program_are_refused():
    stamps = np.array([[0, 1, 2, 3, 4, 5], [4, 5, 6, 7, 8, 9]], np.int64) * 1000
    tiles = np.array([(0, 0, 0, 0), (1, 0, 0, 0)], np.int32)
    with pytest.raises(ValueError, match="before the previous tile"):
        tile_times(stamps, tiles, offsets=np.array([0, 2]))
