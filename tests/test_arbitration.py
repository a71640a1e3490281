"""xsim.arbitration: weights by SM, placements per K, the per-burst spread, and their profile keys."""

import dataclasses
import json

import numpy as np
import pytest

from helpers import toy_platform
from xsim.arbitration import Arbitration, ArbitrationError
from xsim.platform import Platform, ProfileError


def test_placement_is_measured_per_k_else_a_prefix_of_the_nearest_larger_k():
    arb = Arbitration(sm_weights=(1.0,) * 8, placements={4: (6, 7, 0, 2), 2: (5, 1)})
    assert arb.placement(4) == (6, 7, 0, 2) and arb.placement(2) == (5, 1)
    assert arb.placement(3) == (6, 7, 0)          # smallest traced K' >= 3 is 4
    assert arb.placement(1) == (5,)
    assert arb.placement(6) == (6, 7, 0, 2, 6, 7)  # beyond the largest: cycled
    assert Arbitration().placement(3) == (0, 1, 2)


def test_weights_are_those_of_the_sm_each_cta_runs_on():
    arb = Arbitration(sm_weights=(1.0, 2.0, 3.0, 4.0), placements={2: (3, 0)})
    assert arb.weights_for(2) == [4.0, 1.0]
    platform = dataclasses.replace(toy_platform(), producer_weights=(9.0, 9.0), arbitration=arb)
    assert platform.weights_for(2) == [4.0, 1.0]                 # SM weights replace rank weights
    rank_only = dataclasses.replace(platform, arbitration=Arbitration(burst_sigma=0.1))
    assert rank_only.weights_for(2) == [9.0, 9.0]


def test_group_weights_split_a_group_share_among_its_active_ctas():
    # SMs 0,1 form group 0 (share (1+3)/2 = 2 per SM), SMs 2,3 group 1 (share 1 per SM).
    arb = Arbitration(sm_weights=(1.0, 3.0, 0.5, 1.5), placements={4: (0, 1, 2, 3), 2: (0, 2)}, group_sms=2)
    assert arb.weights_for(4) == pytest.approx([2.0, 2.0, 1.0, 1.0])
    assert arb.weights_for(2) == pytest.approx([4.0, 2.0])      # a lone CTA gets its group's share


def test_weight_exponent_shrinks_the_static_weights_towards_equal():
    w = (1.0, 4.0, 0.25, 1.0)
    arb = Arbitration(sm_weights=w, placements={3: (1, 2, 0)}, weight_exponent=0.5)
    assert arb.weights_for(3) == pytest.approx([2.0, 0.5, 1.0])
    assert Arbitration(sm_weights=w, placements={3: (1, 2, 0)}, weight_exponent=0.0).weights_for(3) == [1.0] * 3
    same = Arbitration(sm_weights=w, placements={3: (1, 2, 0)})
    assert same.weights_for(3) == [4.0, 0.25, 1.0]                # 1: the measured weights, bit for bit
    assert "weight_exponent" not in same.to_dict()                 # older profiles keep their bytes
    back = Arbitration.from_dict(json.loads(json.dumps(arb.to_dict())))
    assert back == arb and back.weights_for(3) == arb.weights_for(3)


def test_burst_factors_are_seeded_mean_one_and_shrink_with_the_backlog():
    arb = Arbitration(burst_sigma=0.4, seed=7, sigma_ref_bytes=2000.0)
    f = arb.burst_factors(200, 50)
    assert f.shape == (200, 50) and np.array_equal(f, arb.burst_factors(200, 50))
    assert f.mean() == pytest.approx(1.0, abs=0.02) and np.log(f).std() == pytest.approx(0.4, rel=0.03)
    assert arb.sigma_for(2000.0) == pytest.approx(0.4)
    assert arb.sigma_for(8000.0) == pytest.approx(0.2)           # 1 / sqrt(backlog)
    assert arb.sigma_for(0.0) == pytest.approx(0.8)              # floored at a quarter of the reference
    assert np.log(arb.burst_factors(100, 10, 8000.0)).std() == pytest.approx(0.2, rel=0.1)
    assert np.array_equal(Arbitration().burst_factors(3, 2), np.ones((3, 2)))


def test_capacity_factors_share_q_exactly_and_oppose_the_weight_draws():
    arb = Arbitration(burst_sigma=0.3, seed=3, capacity_sigma=0.2)
    c, f = arb.capacity_factors(50, 8), arb.burst_factors(50, 8)
    assert c.shape == (50, 8) and np.allclose(c.mean(axis=0), 1.0, rtol=1e-12)
    assert np.corrcoef(np.log(c[:, 0]), np.log(f[:, 0]))[0, 1] == pytest.approx(-1.0)   # same draws, one burst
    assert np.log(c).std() == pytest.approx(0.2, rel=0.1)
    assert Arbitration(burst_sigma=0.3).capacity_factors(5, 2) is None      # off by default
    assert Arbitration(capacity_sigma=0.2).capacity_factors(5, 2) is None   # only with the per-burst spread


def test_burst_draws_shared_within_an_sm_group():
    arb = Arbitration(placements={4: (6, 7, 2, 9)}, burst_sigma=0.3, burst_group_sms=2)
    f = arb.burst_factors(4, 5)
    assert np.array_equal(f[0], f[1]) and not np.array_equal(f[0], f[2]) and not np.array_equal(f[2], f[3])
    assert np.array_equal(Arbitration(burst_sigma=0.3).burst_factors(4, 5),
                          Arbitration(burst_sigma=0.3, burst_group_sms=1).burst_factors(4, 5))


@pytest.mark.parametrize("kwargs, message", [
    ({"sm_weights": (1.0, -1.0)}, "sm_weights"),
    ({"sm_weights": (1.0,), "placements": {2: (0, 1)}}, "names an SM without a weight"),
    ({"placements": {3: (0, 1)}}, "must name 3 SMs"),
    ({"burst_sigma": -0.1}, "burst_sigma"),
    ({"sigma_ref_bytes": 0.0}, "sigma_ref_bytes"),
    ({"group_sms": 0}, "group_sms"),
    ({"weight_exponent": 1.5}, "weight_exponent"),
    ({"weight_exponent": -0.1}, "weight_exponent"),
    ({"capacity_sigma": -0.1}, "capacity_sigma"),
    ({"burst_group_sms": 0}, "burst_group_sms"),
])
def test_bad_arbitration_is_refused(kwargs, message):
    with pytest.raises(ArbitrationError, match=message):
        Arbitration(**kwargs)


def test_profile_round_trip_and_old_profiles_load():
    arb = Arbitration(sm_weights=(1.0, 2.0, 0.5, 1.0), placements={2: (3, 1)}, burst_sigma=0.25, seed=1,
                      sigma_ref_bytes=1500.0, group_sms=2, capacity_sigma=0.1, burst_group_sms=2)
    platform = dataclasses.replace(toy_platform(), arbitration=arb)
    data = json.loads(json.dumps(platform.to_dict()))
    back = Platform.from_dict(data)
    assert back.arbitration == arb and back.weights_for(2) == platform.weights_for(2)
    old = toy_platform().to_dict()
    assert old["arbitration"] == {"producer_weights": None}      # no new keys without the model
    assert Platform.from_dict(old).arbitration is None
    data["arbitration"]["burst_sigma"] = -1
    with pytest.raises(ProfileError, match="burst_sigma"):
        Platform.from_dict(data)
