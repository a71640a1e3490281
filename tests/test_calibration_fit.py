"""The fit recovers the parameters synthetic (DES-simulated) records were made with."""

import math

import pytest

from calibration.dataset import split, store_records
from calibration.fit import fit_records
from calibration.records import load_records
from calibration.stages import FitError, fit_drain
from calibration.synthetic import known_platform, small_plan, synthetic_records, write_jsonl


@pytest.fixture(scope="session")
def synthetic_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("synthetic") / "synthetic.jsonl"
    write_jsonl(synthetic_records(plan=small_plan()), path)
    return path


@pytest.fixture(scope="session")
def fitted(synthetic_file):
    rs = load_records([synthetic_file])
    return rs, fit_records(rs)


def test_fit_recovers_r_t_iss0_and_q(fitted):
    _, fit = fitted
    truth = known_platform()
    assert fit.drain_rate_gbps == pytest.approx(truth.drain_rate_gbps, rel=0.02)
    lo, hi = fit.drain.ci95[0]
    assert lo < fit.drain_rate_gbps < hi
    for k, b in ((16, 8192), (132, 32768), (132, 131072), (33, 65536)):
        assert fit.issue_model.t_iss0_us(k, b) == pytest.approx(truth.t_iss0_us(k, b), rel=0.03)
    for k in (16, 33, 132):
        assert fit.capacity_model.capacity_bytes(k) == pytest.approx(truth.capacity_bytes(k), rel=0.05)
    assert fit.burst_overhead.values[0] == pytest.approx(truth.burst_overhead_us, abs=0.06)
    assert fit.grid_barrier.values[0] == pytest.approx(truth.grid_barrier_us, abs=0.1)


def test_fit_is_deterministic_and_hashes_its_input(fitted, synthetic_file):
    rs, fit = fitted
    again = fit_records(load_records([synthetic_file]))
    assert again.drain.values == fit.drain.values and again.issue.values == fit.issue.values
    assert fit.records_sha256 == rs.sha256 and len(fit.records_sha256) == 64


def test_split_holds_out_one_k_and_every_third_gap_point(fitted):
    rs, fit = fitted
    sp = split(store_records(rs, "st.v4"))
    assert sp.heldout_producers == 66
    assert all(int(r.params["producers"]) != 66 for r in sp.train)
    gaps = sorted(float(r.params["gap_us"]) for r in sp.heldout
                  if r.params["producers"] == 132 and r.params["burst_bytes"] == 32768 and r.params["aligned"])
    sweep = sorted(float(r.params["gap_us"]) for r in store_records(rs, "st.v4") if r.kind == "periodic"
                   and r.params["producers"] == 132 and r.params["burst_bytes"] == 32768 and r.params["aligned"]
                   and r.params["gap_us"] > 0)
    assert gaps == sweep[1::3]
    assert {r.where for r in sp.train}.isdisjoint({r.where for r in sp.heldout})


def test_ci_from_jacobian_is_finite_and_residuals_are_kept(fitted):
    _, fit = fitted
    for stage in (fit.drain, fit.issue):
        assert all(math.isfinite(lo) and math.isfinite(hi) and lo <= hi for lo, hi in stage.ci95)
        assert len(stage.residuals) == stage.n_points


def test_too_few_points_is_a_fit_error():
    with pytest.raises(FitError, match="at least two"):
        fit_drain([1e6], [3.0])


def test_free_running_factor_is_the_median_plateau_ratio_and_kept_only_if_it_helps():
    import dataclasses

    import numpy as np

    from calibration.fit import Points, fit_free_running_factor
    from xsim.platform import IssueModel

    law = IssueModel(t_fixed_us=0.1, producer_issue_gbps=50.0)

    def points(ratio):
        n = len(ratio)
        k, b = np.full(n, 4.0), np.full(n, 4096.0)
        t0 = np.asarray([law.t_iss0_us(4, 4096.0)] * n)
        gap = np.full(n, 1e3)                                              # far past G*
        return Points((None,) * n, k, b, gap, np.zeros(n, bool), np.zeros(n, bool), np.zeros(n),
                      t0 * np.asarray(ratio), gap + t0)

    issue, out = fit_free_running_factor(points([0.87, 0.88, 0.9, 0.86]), law, 50.0)
    assert issue.free_running_factor == pytest.approx(0.875) and out["factor"] == pytest.approx(0.875)
    assert dataclasses.replace(issue, free_running_factor=None) == law
    issue, out = fit_free_running_factor(points([0.99, 1.02, 1.0, 0.98]), law, 50.0)
    assert issue is law and out["factor"] is None                            # no 20 % gain: no factor
    issue, out = fit_free_running_factor(points([0.9, 0.9]), law, 50.0)
    assert issue is law and out["n_points"] == 2                              # too few points


def test_drain_law_is_taken_only_by_its_rule(tmp_path):
    import dataclasses

    truth = dataclasses.replace(known_platform(), drain_half_producers=8.0)
    path = tmp_path / "law.jsonl"
    write_jsonl(synthetic_records(truth, plan=small_plan()), path)
    rs = load_records([path])
    on, off = fit_records(rs, drain_law=True), fit_records(rs)
    assert off.drain_law is None and off.drain_half_producers is None
    assert on.drain_half_producers == pytest.approx(8.0, rel=0.3)
    assert on.drain_rate_gbps == pytest.approx(truth.drain_rate_gbps, rel=0.02)   # R at K = 132
    assert on.drain_law.rms_residual < 0.8 * on.drain.rms_residual
    after = fit_records(rs, drain_law="after")
    assert after.drain_law_mode == "after" and on.drain_law_mode == "k" and off.drain_law_mode == "off"
    assert after.drain_half_producers == pytest.approx(8.0, rel=0.3)
    assert after.drain_law.rms_residual < 0.8 * after.drain.rms_residual
    # fitted after the stages: R, the knees and T_iss0 are the one-R fit's, only the law is added
    assert after.drain.values == off.drain.values and after.issue.values == off.issue.values
    assert {k: f.values for k, f in after.knee_fits.items()} == {k: f.values for k, f in off.knee_fits.items()}
    assert after.drain_rate_gbps == after.drain_law.values[0] != off.drain_rate_gbps


def test_drain_law_mode_is_checked(fitted):
    rs, _ = fitted
    with pytest.raises(FitError, match='"drain_law" must be one of off, k, after'):
        fit_records(rs, drain_law="sometimes")


def test_drain_law_is_not_taken_where_r_does_not_depend_on_k(fitted):
    rs, fit = fitted
    for mode in (True, "after"):
        again = fit_records(rs, drain_law=mode)
        assert again.drain_law is None and again.drain_rate_gbps == fit.drain_rate_gbps


def test_zero_gap_barrier_is_the_median_latency_bound_extra_and_kept_only_if_it_helps():
    import numpy as np

    from calibration.fit import Points, fit_zero_gap_barrier
    from xsim.platform import IssueModel

    law = IssueModel(t_fixed_us=0.05, producer_issue_gbps=50.0)
    t0 = law.t_iss0_us(4, 4096.0)

    def points(extras):
        n = len(extras)
        k, b = np.full(n, 4.0), np.full(n, 4096.0)
        return Points((None,) * n, k, b, np.zeros(n), np.ones(n, bool), np.zeros(n, bool), np.zeros(n),
                      np.full(n, t0), t0 + 0.16 + np.asarray(extras))

    out = fit_zero_gap_barrier(points([0.6, 0.62, 0.64]), law, 1e6, 0.16, 0.9)    # V/R ~ 0: latency-bound
    assert out["taken"] and out["value"] == pytest.approx(0.62) and out["n_points"] == 3
    assert out["rms_relative_residual"] < 0.8 * out["rms_relative_residual_g_barrier"]
    out = fit_zero_gap_barrier(points([0.89, 0.9, 0.91]), law, 1e6, 0.16, 0.9)
    assert not out["taken"]                                                     # the G > 0 barrier already fits
    assert fit_zero_gap_barrier(points([0.6]), law, 1e6, 0.16, 0.9) == {"n_points": 1, "taken": False}
    assert fit_zero_gap_barrier(points([0.6, 0.6]), law, 1e-3, 0.16, 0.9)["n_points"] == 0   # drain-bound
