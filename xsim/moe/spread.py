"""Per-tile mainloop spread: each tile its own draw, the same draw in every schedule.

The fused kernel's mainloops are not all equal: the local-Combine control measures, within one
config and tile kind, (p90 - p10) / median of 0.1-0.5 (experts, m-blocks, each SM's share of the
memory system). A DES whose tiles are all equal keeps the SMs in lock step, so the Combine
stores of co-running Linear-2 tiles reach the X-Stage at the same instants and pile up above
the load gate's threshold, as on the GPU they only do where a schedule really aligns the SMs
(the expert waves' boundaries). With the spread, each tile's mainloop is its kind's mean times a
lognormal factor of mean 1 and the kind's measured coefficient of variation (the compute model's
:meth:`~xsim.moe.compute.MainloopModel.spread`). The factor is a hash of the tile's identity
(kind, expert, m-block, n-block) and a seed, so the two schedules of a config, which hold the
same tiles, give each tile the same mainloop.
"""

from __future__ import annotations

import numpy as np

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer (Steele, Lea, Flood 2014) on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK
        x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK
        x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK
        return x ^ (x >> np.uint64(31))


def _uniform(tiles: np.ndarray, seed: int, stream: int) -> np.ndarray:
    """A uniform in (0, 1) per tile from its identity, the seed and a stream number."""
    h = np.full(len(tiles), np.uint64(seed) * np.uint64(4) + np.uint64(stream), dtype=np.uint64)
    for column in range(tiles.shape[1]):
        h = _splitmix64(h ^ tiles[:, column].astype(np.uint64))
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)


def tile_factors(tiles: np.ndarray, cv_by_kind: dict[int, float], seed: int = 0) -> np.ndarray:
    """float64[n_tiles]: each tile's mainloop factor (lognormal, mean 1, the CV of its kind; 1.0
    for a kind without a spread). ``tiles`` int[n_tiles, 4] as the tile table holds them."""
    if seed < 0:
        raise ValueError('"seed" must be >= 0.')
    tiles = np.asarray(tiles)
    if tiles.ndim != 2 or tiles.shape[1] != 4:
        raise ValueError(f'"tiles" must be [n_tiles, 4], got shape {tiles.shape}')
    cv = np.zeros(len(tiles))
    for kind, value in cv_by_kind.items():
        if not value >= 0:
            raise ValueError(f'the spread of tile kind {kind} must be >= 0, got {value!r}')
        cv[tiles[:, 0] == kind] = value
    u1, u2 = _uniform(tiles, seed, 1), _uniform(tiles, seed, 2)
    normal = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)        # Box-Muller
    sigma = np.sqrt(np.log1p(cv ** 2))
    return np.exp(sigma * normal - 0.5 * sigma ** 2)
