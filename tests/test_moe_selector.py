"""The selector's locality model (a byte-LRU replay) and its pick."""

import numpy as np
import pytest

from xsim.moe.selector import Locality, lru_misses, pick


def brute_lru(ids, nbytes, capacity):
    cache, miss, reread, seen = [], 0.0, 0.0, set()
    for s, b in zip(ids, nbytes):
        if s in seen:
            reread += b
            if s in cache:
                cache.remove(s)
            else:
                miss += b
        seen.add(s)
        cache.append(s)
        while sum(nbytes[list(ids).index(x)] for x in cache) > capacity:
            cache.pop(0)
    return miss, reread


@pytest.mark.parametrize("seed", range(5))
def test_fenwick_lru_equals_a_direct_lru(seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 12, size=200)
    size = rng.integers(1, 5, size=12).astype(float)
    nbytes = size[ids]
    for capacity in (4.0, 10.0, 25.0, 100.0):
        assert lru_misses(ids, nbytes, capacity) == pytest.approx(brute_lru(ids.tolist(), nbytes.tolist(), capacity))


def test_pick_weighs_the_gain_against_the_extra_misses():
    cheap, dear = Locality(0, 0, 1e6, 0.0), Locality(4e9, 4e9, 2e8, 1000.0)
    assert pick(2000.0, 1500.0, cheap, cheap).schedule == "interleaved"
    assert pick(2000.0, 1500.0, cheap, dear).schedule == "wave"          # 500 us gain < 1000 us cost
    assert pick(1500.0, 1600.0, cheap, cheap).schedule == "wave"
