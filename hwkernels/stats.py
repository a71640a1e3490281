"""The one place where samples become statistics: Stats(mean, median, p10, p90, min, max, n)."""

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Stats:
    """Summary of one sample set; percentiles by linear interpolation (numpy's default)."""

    mean: float
    median: float
    p10: float
    p90: float
    min: float
    max: float
    n: int

    def as_dict(self) -> dict:
        return asdict(self)


def summarize(samples) -> Stats:
    """Stats of a non-empty, finite 1-D sample set (any array-like)."""
    x = np.asarray(samples, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError('"samples" must not be empty.')
    if not np.all(np.isfinite(x)):
        raise ValueError('"samples" must be finite.')
    p10, p50, p90 = np.percentile(x, [10.0, 50.0, 90.0])
    return Stats(
        mean=float(x.mean()),
        median=float(p50),
        p10=float(p10),
        p90=float(p90),
        min=float(x.min()),
        max=float(x.max()),
        n=int(x.size),
    )
