import dataclasses
import json

import pytest

from helpers import toy_platform
from xsim.platform import (
    CapacityModel, IssueModel, Platform, ProfileError, load_profile, resolve_platform, save_profile, shipped_platforms,
)
from xsim.units import MIB


def test_paper_profile_is_published_values():
    p = shipped_platforms()["paper-8gpu"]
    assert p.status == "published"
    assert p.drain_rate_gbps == 717
    assert p.t_iss0_us(148, 32 * 1024) == pytest.approx(0.76)
    assert p.capacity_bytes(148) == pytest.approx(4.25 * MIB)


def test_issue_model_depends_on_k_and_b():
    m = IssueModel(t_fixed_us=0.2, producer_issue_gbps=50, aggregate_issue_gbps=2000)
    assert m.t_iss0_us(10, 50_000) == pytest.approx(0.2 + 1.0)        # per-producer rate binds
    assert m.t_iss0_us(100, 50_000) == pytest.approx(0.2 + 2.5)       # aggregate ceiling binds
    assert m.t_iss0_us(100, 100_000) > m.t_iss0_us(100, 50_000)


def test_capacity_model_depends_on_k():
    c = CapacityModel(max_bytes=4 * MIB, per_producer_bytes=40_000)
    assert c.capacity_bytes(10) == 400_000
    assert c.capacity_bytes(1000) == 4 * MIB


def test_round_trip(tmp_path):
    p = shipped_platforms()["paper-8gpu"]
    save_profile(p, tmp_path / "p.json")
    assert load_profile(tmp_path / "p.json") == p


def test_overrides_replace_parameters_and_say_so():
    p = resolve_platform("paper-8gpu").with_overrides(t_iss0_us=1.5, drain_gbps=300, capacity_bytes=1e6)
    assert (p.t_iss0_us(7, 123), p.drain_rate_gbps, p.capacity_bytes(3)) == (1.5, 300, 1e6)
    assert p.status == "override" and p.provenance["overridden"] == ["capacity_bytes", "drain_gbps", "t_iss0_us"]


def test_effective_drain_with_link_cap():
    p = Platform(name="x", drain_rate_gbps=600, link_drain_rate_gbps=250, issue=IssueModel(1.0),
                 capacity=CapacityModel(1e6))
    assert [p.effective_drain_rate_gbps(n) for n in (1, 2, 3)] == [250, 500, 600]


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("drain_rate_gbps"), "missing the key 'drain_rate_gbps'"),
    (lambda d: d.update(drain_rate_gbps=-1), '"drain_rate_gbps" must be'),
    (lambda d: d.update(schema="other/9"), '"schema" must be'),
    (lambda d: d["capacity"].update(max_bytes=None), "capacity needs"),
    (lambda d: d["t_iss0"].update(bogus=1), "unknown or malformed key"),
])
def test_bad_profiles_are_clear(tmp_path, mutate, message):
    data = shipped_platforms()["paper-8gpu"].to_dict()
    mutate(data)
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ProfileError, match=message):
        load_profile(tmp_path / "bad.json")


def test_unknown_platform_name():
    with pytest.raises(ProfileError, match="unknown platform 'nope'"):
        resolve_platform("nope")


def test_threads_term_is_interpolated_in_log2_and_off_by_default():
    base = IssueModel(t_fixed_us=0.1, producer_issue_gbps=1.0)        # 1 GB/s = 1000 B/us
    model = IssueModel(t_fixed_us=0.1, producer_issue_gbps=1.0, threads_ref=256,
                       thread_terms=((512, 0.2, 0.01), (256, 0.0, 0.0), (128, 0.05, -0.001)))
    assert model.thread_terms[0][0] == 128                            # sorted by thread count
    b = 2048.0
    assert model.t_iss0_us(4, b) == base.t_iss0_us(4, b) == pytest.approx(0.1 + 2.048)
    assert model.t_iss0_us(4, b, 256) == base.t_iss0_us(4, b)
    assert model.t_iss0_us(4, b, 512) == pytest.approx(2.148 + 0.2 + 0.02)
    assert model.t_iss0_us(4, b, 128) == pytest.approx(2.148 + 0.05 - 0.002)
    assert model.t_iss0_us(4, b, 362) == pytest.approx(2.148 + 0.5 * (0.2 + 0.02), rel=1e-2)  # ~log2 midpoint
    assert model.t_iss0_us(4, b, 2048) == model.t_iss0_us(4, b, 512)  # clamped outside the table
    assert base.t_iss0_us(4, b, 512) == base.t_iss0_us(4, b)          # no terms: no threads effect


def test_threads_term_round_trips_and_old_profiles_keep_their_keys(tmp_path):
    p = resolve_platform("h200-nvlink-x2")
    model = IssueModel(**{**vars(p.issue), "threads_ref": 256, "thread_terms": ((256, 0.0, 0.0), (1024, 0.05, 0.0))})
    path = tmp_path / "t.json"
    save_profile(dataclasses.replace(p, issue=model), path)
    assert load_profile(path).issue == model
    assert "thread_terms" not in toy_platform().to_dict()["t_iss0"]
    with pytest.raises(ProfileError, match="given together"):
        IssueModel(t_fixed_us=0.1, threads_ref=256)


def test_drain_half_producers_is_optional_round_trips_and_is_checked():
    import dataclasses

    from xsim.platform import Platform, ProfileError, resolve_platform
    base = resolve_platform("h200-pcie-host")   # its R does not depend on K: no law taken
    assert base.drain_half_producers is None and "drain_half_producers" not in base.to_dict()
    nvlink = resolve_platform("h200-nvlink-x2")  # calibrate's default --drain-law after took it
    assert nvlink.drain_half_producers > 0 and "drain_half_producers" in nvlink.to_dict()
    assert nvlink.drain_rate_for(16) < nvlink.drain_rate_for(132) == pytest.approx(nvlink.drain_rate_gbps, rel=1e-15)
    assert base.drain_rate_for(16) == base.drain_rate_gbps == base.effective_drain_rate_gbps(1, 16)
    law = dataclasses.replace(base, drain_half_producers=1.5)
    again = Platform.from_dict(law.to_dict())
    assert again.drain_half_producers == 1.5 and again == law
    assert law.drain_rate_for(132) == pytest.approx(base.drain_rate_gbps, rel=1e-15)
    assert law.drain_rate_for(16) < law.drain_rate_for(66) < law.drain_rate_for(132)
    assert law.drain_rate_for(None) == base.drain_rate_gbps
    assert law.with_overrides(drain_gbps=100.0).drain_rate_for(16) == 100.0   # an override is one R
    for bad in (-1.0, float("nan"), True, "2"):
        with pytest.raises(ProfileError, match='"drain_half_producers" must be a finite number >= 0'):
            dataclasses.replace(base, drain_half_producers=bad)


def test_zero_gap_barrier_is_optional_round_trips_and_is_checked():
    import dataclasses

    from xsim.platform import Platform, ProfileError, resolve_platform
    host = resolve_platform("h200-pcie-host")    # no latency-bound aligned zero-gap point: not fitted
    assert host.grid_barrier_zero_gap_us is None and "grid_barrier_zero_gap_us" not in host.to_dict()["microbench"]
    assert host.barrier_us(0.0) == host.barrier_us(5.0) == host.grid_barrier_us
    nvlink = resolve_platform("h200-nvlink-x2")
    assert 0 < nvlink.grid_barrier_zero_gap_us < nvlink.grid_barrier_us
    assert nvlink.barrier_us(0.0) == nvlink.grid_barrier_zero_gap_us and nvlink.barrier_us(0.5) == nvlink.grid_barrier_us
    again = Platform.from_dict(nvlink.to_dict())
    assert again == nvlink
    for bad in (-1.0, float("nan"), True, "2"):
        with pytest.raises(ProfileError, match="grid_barrier_zero_gap_us"):
            dataclasses.replace(host, grid_barrier_zero_gap_us=bad)
