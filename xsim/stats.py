"""Summary statistics: one definition for measurements and predictions alike."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Stats:
    """mean, median, p10, p90, min, max and count of a sample (NaN when it is empty)."""

    mean: float
    median: float
    p10: float
    p90: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, values) -> "Stats":
        x = np.asarray(values, dtype=float)
        x = x[np.isfinite(x)]
        if x.size == 0:
            return cls(*([math.nan] * 6), 0)
        p10, median, p90 = np.percentile(x, [10, 50, 90])
        return cls(float(x.mean()), float(median), float(p10), float(p90),
                   float(x.min()), float(x.max()), int(x.size))

    def to_dict(self) -> dict:
        return asdict(self)
