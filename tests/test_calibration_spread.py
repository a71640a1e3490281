"""calibration.spread: the per-burst sigma and the static-weight shrink, fitted on the weight trace's point."""

import numpy as np
import pytest

from calibration import spread
from helpers import toy_platform

MEASURED = (7.0, 16.0, 28.0)


def _fake(monkeypatch, log_error_by_exponent: dict, sigma_best=0.3):
    """A DES stand-in: at weight exponent e and sigma s it misses every statistic by the factor
    exp(error[e] + |s - sigma_best|), so the best sigma is sigma_best at every e."""
    def simulate(params, platform):
        arb = platform.arbitration
        off = log_error_by_exponent.get(arb.weight_exponent, 1.0) + abs(arb.burst_sigma - sigma_best)
        return tuple(m * np.exp(off) for m in MEASURED)

    monkeypatch.setattr(spread, "_simulate", simulate)
    monkeypatch.setattr(spread, "_trace_point", lambda path: ({"producers": 4, "burst_bytes": 4096}, MEASURED))
    monkeypatch.setattr(spread, "sm_weights_from_trace", lambda path, sms: ((1.0, 2.0, 0.5, 1.0), (0, 1, 2, 3)))
    monkeypatch.setattr(spread, "placements_from_traces", lambda folder, mech: {})


def test_a_shrink_that_cuts_the_error_by_20_percent_is_kept(monkeypatch):
    _fake(monkeypatch, {1.0: 0.2, 0.75: 0.1, 0.5: 0.15})
    fit = spread.fit_spread(toy_platform(), None, None, "st.v4")
    assert fit.weight_exponent == 0.75 and fit.arbitration.weight_exponent == 0.75
    assert fit.sigma == pytest.approx(0.3) and fit.rms_log_error == pytest.approx(0.1)
    assert [e for e, _, _ in fit.by_exponent] == list(spread.EXPONENT_GRID)
    assert dict((e, err) for e, _, err in fit.by_exponent)[1.0] == pytest.approx(0.2)


def test_a_shrink_that_gains_less_keeps_the_measured_weights(monkeypatch):
    _fake(monkeypatch, {1.0: 0.11, 0.75: 0.1})                 # 0.10 is not below 0.8 x 0.11
    fit = spread.fit_spread(toy_platform(), None, None, "st.v4")
    assert fit.weight_exponent == 1.0 and fit.arbitration.weight_exponent == 1.0
    assert fit.rms_log_error == pytest.approx(0.11)
