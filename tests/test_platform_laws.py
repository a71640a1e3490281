"""The two laws of a profile, T_iss0 and Q(K) (xsim.platform_laws; re-exported by xsim.platform)."""

import pytest

from xsim import platform, platform_laws
from xsim.platform_laws import CapacityModel, IssueModel, ProfileError


def test_the_laws_are_the_ones_platform_exports():
    for name in ("CapacityModel", "IssueModel", "ProfileError"):
        assert getattr(platform, name) is getattr(platform_laws, name)


def test_capacity_is_the_smaller_of_its_bounds_and_refuses_bad_numbers():
    q = CapacityModel(max_bytes=4e6, per_producer_bytes=20e3, shared_bytes=1e6)
    assert q.capacity_bytes(16) == pytest.approx(1e6 + 16 * 20e3)
    assert q.capacity_bytes(1000) == pytest.approx(4e6)
    with pytest.raises(ProfileError, match='"shared_bytes" needs "per_producer_bytes"'):
        CapacityModel(max_bytes=1e6, shared_bytes=1.0)
    with pytest.raises(ProfileError, match='"max_bytes" must be a finite number > 0'):
        CapacityModel(max_bytes=-1.0)
    assert IssueModel(t_fixed_us=0.5).t_iss0_us(132, 32768) >= 0.5


def test_capacity_power_law_is_concave_and_serialises_only_when_set():
    q = CapacityModel(per_producer_bytes=425e3, exponent=0.46)
    qs = [q.capacity_bytes(k) for k in (16, 33, 66, 132)]
    assert qs[0] == pytest.approx(425e3 * 16 ** 0.46)
    assert all(b > a for a, b in zip(qs, qs[1:]))                    # grows with K ...
    assert all(b / a < 2 for a, b in zip(qs[1:], qs[2:]))              # ... less than in proportion
    assert q.to_dict()["exponent"] == 0.46
    linear = CapacityModel(per_producer_bytes=20e3, shared_bytes=1e6)
    assert "exponent" not in linear.to_dict()                            # older profiles keep their bytes
    assert CapacityModel(per_producer_bytes=20e3, shared_bytes=1e6, exponent=1.0).capacity_bytes(66) \
        == linear.capacity_bytes(66)
    with pytest.raises(ProfileError, match='"exponent" needs "per_producer_bytes"'):
        CapacityModel(max_bytes=1e6, exponent=0.5)
    with pytest.raises(ProfileError, match=r'"exponent" must be a number in \(0, 2\]'):
        CapacityModel(per_producer_bytes=1e3, exponent=0.0)


def test_free_running_factor_is_optional_and_checked():
    assert IssueModel(t_fixed_us=0.5).free_running_factor is None
    assert IssueModel(t_fixed_us=0.5, free_running_factor=0.87).free_running_factor == 0.87
    for bad in (0.0, -1.0, 3.0, float("nan"), True):
        with pytest.raises(ProfileError, match='"free_running_factor" must be a number in'):
            IssueModel(t_fixed_us=0.5, free_running_factor=bad)


def test_drain_rate_law_is_r_at_the_reference_k_and_falls_at_small_k():
    from xsim.platform_laws import drain_rate_at
    assert drain_rate_at(360.0, 132, 1.5, 132) == pytest.approx(360.0, rel=1e-15)
    assert drain_rate_at(360.0, 7, 0.0, 132) == pytest.approx(360.0, rel=1e-15)   # K0 = 0: one R
    r16, r33, r66 = (drain_rate_at(360.0, k, 1.5, 132) for k in (16, 33, 66))
    assert r16 < r33 < r66 < 360.0
    assert r16 == pytest.approx(360.0 * (16 / 17.5) / (132 / 133.5))
    with pytest.raises(ValueError, match='"producers" must be >= 1'):
        drain_rate_at(360.0, 0, 1.5, 132)
