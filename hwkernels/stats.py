"""Measurement statistics: strict validation, then the project's one Stats definition.

``xsim.stats`` is plain numpy (importing ``xsim`` pulls in nothing heavier), so measurements
and predictions are summarized by the same code. A measurement must never be silently
shortened, so ``summarize`` refuses empty or non-finite samples instead of dropping them.
"""

import numpy as np

from xsim.stats import Stats

__all__ = ["Stats", "summarize"]


def summarize(samples) -> Stats:
    """Stats of a non-empty, finite 1-D sample set (any array-like)."""
    x = np.asarray(samples, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError('"samples" must not be empty.')
    if not np.all(np.isfinite(x)):
        raise ValueError('"samples" must be finite.')
    return Stats.of(x)
