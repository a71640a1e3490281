"""Per-tile spread: each tile its own draw, the same draw wherever the same tile runs.

Measured tiles are not all equal: the fused MoE kernel's mainloops spread by (p90 - p10) /
median = 0.1-0.5 within one config and tile kind, the attention kernel's Q-loops by ~1 % (its
tiles are all the same work). A DES whose tiles are all equal keeps the SMs in lock step, so
their remote stores reach the X-Stage at the same instants and pile up above the load gate's
threshold, as on the GPU they only do where the kernel really aligns the SMs (MoE's expert-wave
boundaries, attention's waves of equal tiles). With the spread, each tile's time is its
model's mean times a lognormal factor of mean 1 and the measured coefficient of variation. The
factor is a hash of the tile's identity (four integers: MoE's kind, expert, m-block, n-block;
attention's program, tile, replay, sub-tile) and a seed, so two tables or variants holding the
same tiles give each the same time.
"""

from __future__ import annotations

import math

import numpy as np

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)
P10_P90_SIGMAS = 2 * 1.2815515655446004   # p90 - p10 of a normal, in standard deviations


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer (Steele, Lea, Flood 2014) on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK
        x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK
        x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK
        return x ^ (x >> np.uint64(31))


def spread_cv(p10: float, p90: float, mean: float) -> float:
    """A measured per-tile distribution's coefficient of variation, (p90 - p10) / (2.563 mean):
    the normal's standard deviation its p10 and p90 imply, over its mean (NaN if mean <= 0)."""
    return (p90 - p10) / (P10_P90_SIGMAS * mean) if mean > 0 else math.nan


def _identities(ids) -> np.ndarray:
    ids = np.asarray(ids)
    if ids.ndim != 2 or ids.shape[1] != 4:
        raise ValueError(f'"tiles" must be [n_tiles, 4], got shape {ids.shape}')
    return ids


def _uniform(tiles: np.ndarray, seed: int, stream: int) -> np.ndarray:
    """A uniform in (0, 1) per tile from its identity, the seed and a stream number."""
    h = np.full(len(tiles), np.uint64(seed) * np.uint64(4) + np.uint64(stream), dtype=np.uint64)
    for column in range(tiles.shape[1]):
        h = _splitmix64(h ^ tiles[:, column].astype(np.uint64))
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)


def factors(ids: np.ndarray, cv, seed: int = 0) -> np.ndarray:
    """float64[n]: a lognormal factor of mean 1 and coefficient of variation ``cv`` (a number, or
    one per row) for each identity row of ``ids`` (int[n, 4])."""
    if seed < 0:
        raise ValueError('"seed" must be >= 0.')
    ids = _identities(ids)
    cv = np.broadcast_to(np.asarray(cv, dtype=float), (len(ids),))
    if not np.all(cv >= 0):
        raise ValueError("a spread (coefficient of variation) must be >= 0")
    u1, u2 = _uniform(ids, seed, 1), _uniform(ids, seed, 2)
    normal = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)        # Box-Muller
    sigma = np.sqrt(np.log1p(cv ** 2))
    return np.exp(sigma * normal - 0.5 * sigma ** 2)


def tile_factors(tiles: np.ndarray, cv_by_kind: dict[int, float], seed: int = 0) -> np.ndarray:
    """:func:`factors` with the CV of each tile's kind (its first identity column; 0 for a kind
    without a spread)."""
    tiles = _identities(tiles)
    cv = np.zeros(len(tiles))
    for kind, value in cv_by_kind.items():
        if not value >= 0:
            raise ValueError(f'the spread of tile kind {kind} must be >= 0, got {value!r}')
        cv[tiles[:, 0] == kind] = value
    return factors(tiles, cv, seed)
