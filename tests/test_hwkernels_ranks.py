"""The N-rank collectives' pure part (pool_samples) and the one-GPU identity (SOLO)."""

import numpy as np
import pytest

from hwkernels.ranks import SOLO, pool_samples


def test_pool_takes_the_slowest_rank_time_and_every_rank_tiles():
    got = pool_samples([{"kernel_us": 3.0, "span_us": np.array([1.0, 2.0]), "outside_us": 0.5},
                        {"kernel_us": 5.0, "span_us": np.array([7.0]), "outside_us": 0.25}])
    assert got["kernel_us"] == 5.0
    assert got["span_us"].tolist() == [1.0, 2.0, 7.0]
    assert got["outside_us"].tolist() == [0.5, 0.25]          # one per rank, not maxed


def test_pool_refuses_ranks_that_disagree():
    with pytest.raises(ValueError, match="same sample names"):
        pool_samples([{"kernel_us": 1.0}, {"span_us": np.zeros(2)}])
    with pytest.raises(ValueError, match='"every"'):
        pool_samples([])


def test_solo_exchanges_nothing():
    s = {"kernel_us": 2.0}
    assert SOLO.pool(s) is s and SOLO.max_of(4.0) == 4.0 and SOLO.agree(False, 1.5) == (False, 1.5)
    assert SOLO.sync() is None and (SOLO.rank, SOLO.world) == (0, 1)
    with pytest.raises(KeyError):
        SOLO.pool(KeyError("boom"))
