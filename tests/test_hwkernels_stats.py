import math

import numpy as np
import pytest

from hwkernels.stats import Stats, summarize


def test_summarize_exact_values():
    s = summarize([1.0, 2.0, 3.0, 4.0, 10.0])
    assert s.to_dict() == pytest.approx(
        Stats(mean=4.0, median=3.0, p10=1.4, p90=7.6, min=1.0, max=10.0, n=5).to_dict())
    assert isinstance(s.n, int)


def test_summarize_single_sample_and_dict_keys():
    d = summarize(np.array([[2.5]])).to_dict()
    assert list(d) == ["mean", "median", "p10", "p90", "min", "max", "n"]
    assert d["median"] == d["p10"] == d["p90"] == 2.5 and d["n"] == 1


def test_summarize_rejects_empty_and_nonfinite():
    with pytest.raises(ValueError, match="empty"):
        summarize([])
    with pytest.raises(ValueError, match="finite"):
        summarize([1.0, math.nan])


def test_percentiles_are_ordered():
    rng = np.random.default_rng(7)
    s = summarize(rng.lognormal(size=1000))
    assert s.min <= s.p10 <= s.median <= s.p90 <= s.max
