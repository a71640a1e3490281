"""The Q-loop gap between an output tile's bursts: G_Qloop(M) = fixed + sigma ceil(M / b_n).

The paper (Sec. 4.3): "The measured Q-loop gap has a positive fixed component and an
approximately linear steady-state slope" sigma per KV tile. Both are fitted once, by least
squares, on the per-tile Q-loop times of the FA-only records of one tile shape, and then used
for every prediction (never refitted per point).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from xsim.closedform.fa_a2a import kv_tiles, q_loop_gap_us


@dataclass(frozen=True)
class QLoop:
    """Args: sigma_us_per_kv_tile (slope), fixed_us (intercept), block_n (KV tile rows); cv the
    spread of one tile's Q-loop from tile to tile (coefficient of variation, :mod:`xsim.spread`);
    n_points and rms_residual_us describe the fit (0 and NaN when given, not fitted)."""

    sigma_us_per_kv_tile: float
    fixed_us: float
    block_n: int
    n_points: int = 0
    rms_residual_us: float = math.nan
    cv: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.sigma_us_per_kv_tile) and self.sigma_us_per_kv_tile > 0):
            raise ValueError(f'"sigma_us_per_kv_tile" must be > 0, got {self.sigma_us_per_kv_tile!r}.')
        if not math.isfinite(self.fixed_us):
            raise ValueError(f'"fixed_us" must be finite, got {self.fixed_us!r}.')
        if int(self.block_n) != self.block_n or self.block_n < 1:
            raise ValueError(f'"block_n" must be an integer >= 1, got {self.block_n!r}.')
        if not (math.isfinite(self.cv) and self.cv >= 0):
            raise ValueError(f'"cv" must be >= 0, got {self.cv!r}.')

    def gap_us(self, seq_len: int) -> float:
        """G_Qloop(M) with its fixed part (what the DES runs per tile)."""
        return q_loop_gap_us(seq_len, self.block_n, self.sigma_us_per_kv_tile, self.fixed_us)

    def to_dict(self) -> dict:
        return {"sigma_us_per_kv_tile": self.sigma_us_per_kv_tile, "fixed_us": self.fixed_us,
                "block_n": self.block_n, "n_points": self.n_points, "rms_residual_us": self.rms_residual_us,
                "cv": self.cv}


def fit_qloop(seq_lens, qloop_us, block_n: int, cvs=None) -> QLoop:
    """Least-squares line through (ceil(M / b_n), measured Q-loop time) over the sweep,
    residuals relative to the measured time (a 1K point weighs as much as a 64K one); the
    spread ``cv`` is the median of the points' per-tile CVs (``cvs``, :func:`xsim.spread.spread_cv`; 0 without).

    Needs at least two distinct sequence lengths; a non-positive slope is an error (the
    Q-loop must grow with M), and so is a negative fixed part (no tile takes less than
    nothing: a line through a few long sequences whose clocks differ can cross below 0)."""
    m = np.asarray(seq_lens, dtype=float)
    y = np.asarray(qloop_us, dtype=float)
    keep = np.isfinite(y) & (y > 0)
    m, y = m[keep], y[keep]
    if len(set(m.tolist())) < 2:
        raise ValueError("fitting the Q-loop needs FA-only Q-loop times at >= 2 sequence lengths, "
                         f"got {len(set(m.tolist()))}")
    x = np.array([kv_tiles(int(v), block_n) for v in m], dtype=float)
    design = np.column_stack([x, np.ones_like(x)])
    (sigma, fixed), *_ = np.linalg.lstsq(design / y[:, None], np.ones_like(y), rcond=None)
    if not sigma > 0:
        raise ValueError(f"the fitted Q-loop slope is {sigma:.4g} us per KV tile: not > 0")
    if fixed < 0:
        raise ValueError(f"the fitted Q-loop fixed part is {fixed:.4g} us: not >= 0 (fit a sweep that "
                         "includes short sequences)")
    rms = float(np.sqrt(np.mean((design @ np.array([sigma, fixed]) - y) ** 2)))
    c = np.asarray([] if cvs is None else cvs, dtype=float)
    c = c[np.isfinite(c) & (c >= 0)]
    return QLoop(float(sigma), float(fixed), int(block_n), int(len(y)), rms, float(np.median(c)) if c.size else 0.0)
