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


def test_drain_law_recovers_k0_and_needs_two_k():
    import numpy as np

    from calibration.stages import fit_drain_law
    from xsim.platform_laws import drain_rate_at
    from xsim.units import drain_time_us
    k = np.array([16, 16, 33, 33, 132, 132, 132], float)
    v = k * np.array([64, 128, 64, 128, 32, 64, 128]) * 1024.0
    t = np.array([drain_time_us(vv, drain_rate_at(360.0, int(kk), 3.0, 132)) for vv, kk in zip(v, k)])
    law = fit_drain_law(v, t, k, 132)
    assert law.value("drain_rate_gbps") == pytest.approx(360.0, rel=1e-6)
    assert law.value("drain_half_producers") == pytest.approx(3.0, rel=1e-5)
    assert law.rms_residual < 1e-9
    assert fit_drain_law(v[k == 132], t[k == 132], k[k == 132], 132) is None   # one K: K0 unidentified
