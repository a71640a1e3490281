"""calibration.stages.capacity_model: which Q(K) law the training knees choose."""

import pytest

from calibration.stages import capacity_model


def test_power_law_is_taken_for_knees_that_grow_by_a_constant_per_doubling():
    truth = {k: 425e3 * k ** 0.46 for k in (16, 33, 132)}           # concave: the PCIe host's shape
    model, fit = capacity_model(truth)
    assert model.exponent == pytest.approx(0.46, rel=1e-3)
    assert model.shared_bytes is None and model.max_bytes is None
    assert model.capacity_bytes(66) == pytest.approx(425e3 * 66 ** 0.46, rel=1e-3)
    assert fit.names == ("one_producer_kib", "exponent")


def test_affine_knees_keep_the_affine_law():
    truth = {k: 284e3 + 16.7e3 * k for k in (16, 33, 132)}           # the NVLink shape
    model, _ = capacity_model(truth)
    assert model.exponent is None
    assert model.shared_bytes == pytest.approx(284e3, rel=1e-3)
    assert model.capacity_bytes(66) == pytest.approx(284e3 + 66 * 16.7e3, rel=1e-3)


def test_two_knees_never_fit_a_power_law():
    model, _ = capacity_model({16: 425e3 * 16 ** 0.46, 132: 425e3 * 132 ** 0.46})
    assert model.exponent is None
