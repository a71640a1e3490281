"""``xsim report --experiment fa-a2a`` on generated records (tests/fa_a2a_records.py: test data only)."""

import json
import math

import pytest

from fa_a2a_records import generate, toy_host, write
from xsim.cli import main
from xsim.platform import save_profile
from xsim.report.fa_a2a import HEADLINE_KEYS
from xsim.report.fa_a2a_points import Point
from xsim.report.fa_a2a_summary import measured_threshold, predicted_threshold, targets

SEQ_LENS = [1024, 2048, 4096, 8192, 16384, 32768]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fa")
    profile, records = folder / "toy-host.json", folder / "toy-host-fa-a2a.jsonl"
    save_profile(toy_host(), profile)
    write(generate(toy_host(), SEQ_LENS, extra_issue_us=0.2, seed=1), records)
    return profile, records


def _json(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_json_contract_and_targets(files, capsys):
    profile, records = files
    doc = _json(capsys, "report", "--experiment", "fa-a2a", "--records", str(records), "--platform", str(profile),
                "--json")
    for key in HEADLINE_KEYS:
        assert key in doc
    rep = doc["experiments"]["fa-a2a"]
    assert rep["headline_model"] == "des" and rep["n_points"] == len(SEQ_LENS)
    # the DES made these records (plus 0.2 us per remote wave no model knows): it predicts them closely
    assert doc["fused_time_mape"] < 2.0 and doc["cc_time_mape"] < 2.0
    des = rep["series"][0]["errors"]["des"]
    assert des["e_res_mae_us"] < 5.0 and des["e_cc_mae_us"] < 5.0   # 0.2 us per remote wave unknown to the DES
    assert doc["fa_vs_cudnn_min"] == pytest.approx(0.9, rel=0.01)
    assert doc["speedup_max"] > 1.0
    fit = rep["series"][0]["qloop_fit"]
    assert fit["sigma_us_per_kv_tile"] == pytest.approx(0.5, rel=0.01)
    assert fit["fixed_us"] == pytest.approx(3.0, abs=0.3)
    assert 1024 < doc["m_ub_star_predicted"] < 32768
    assert doc["m_ub_star_measured"] in SEQ_LENS
    names = [t["target"] for t in rep["targets"]]
    assert names == ["fa_vs_cudnn_min", "fused_over_fa_above_threshold", "hiding_min_above_threshold",
                     "fused_time_mape", "cc_time_mape", "m_ub_star_measured", "m_ub_star_measured_vs_des"]
    # records the DES made: its own threshold, by the measured rule, is the measured one
    assert doc["m_ub_star_predicted_des"] == doc["m_ub_star_measured"]
    assert all(t["pass"] in (True, False) for t in rep["targets"])
    assert {t["target"]: t["pass"] for t in rep["targets"]}["fused_time_mape"] is True


def test_closed_form_only_and_html(files, capsys, tmp_path):
    profile, records = files
    out = tmp_path / "fa.html"
    doc = _json(capsys, "report", "--experiment", "fa-a2a", "--records", str(records), "--platform", str(profile),
                "--no-des", "-o", str(out), "--json")
    assert doc["experiments"]["fa-a2a"]["headline_model"] == "closed-form"
    assert "des" not in doc["experiments"]["fa-a2a"]["series"][0]["errors"]
    text = out.read_text()
    assert text.startswith("<!doctype html>") and "Fig. 11" in text and "Table 3" in text
    assert len(doc["png"]) == 2 or any("PNG skipped" in n for n in doc["notes"])  # relative and in us


def test_table_output_prints_pass_fail(files, capsys):
    profile, records = files
    assert main(["report", "--experiment", "fa-a2a", "--records", str(records), "--platform", str(profile),
                 "--no-des"]) == 0
    out = capsys.readouterr().out
    assert "Table 3" in out and "targets" in out and ("PASS" in out or "FAIL" in out)


def test_records_without_qloop_times_get_no_predictions(tmp_path, capsys):
    records = tmp_path / "r.jsonl"
    profile = tmp_path / "p.json"
    save_profile(toy_host(), profile)
    recs = generate(toy_host(), [1024, 2048], kinds=("fused", "serial", "sdpa-cudnn"))
    write(recs, records)
    doc = _json(capsys, "report", "--experiment", "fa-a2a", "--records", str(records), "--platform", str(profile),
                "--no-des", "--json")
    assert any("no predictions" in n for n in doc["notes"])
    assert doc["fused_time_mape"] is None and doc["m_ub_star_predicted"] is None


def test_bad_records_file_is_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    assert main(["report", "--experiment", "fa-a2a", "--records", str(bad)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def _point(m, e_res, floor, t_fa=1000.0):
    p = Point(m, None, {"fa-only": t_fa, "fused": t_fa + e_res})
    p.floor_us = floor
    return p


def test_measured_threshold_is_where_the_residual_stays_at_the_floor():
    pts = [_point(1024, 300.0, 10.0), _point(2048, 50.0, 10.0), _point(4096, 25.0, 10.0), _point(8192, 12.0, 10.0),
           _point(16384, -5.0, 10.0)]
    assert measured_threshold(pts) == 4096          # 25 <= 10 + 2 % of 1000
    pts[2] = _point(4096, 31.0, 10.0)
    assert measured_threshold(pts) == 8192
    pts[-1] = _point(16384, 40.0, 10.0)           # the largest point above the floor: no threshold
    assert measured_threshold(pts) is None
    assert math.isnan(_point(1024, 1.0, math.nan).floor_us)


def test_predicted_threshold_applies_the_measured_rule_to_a_models_residual():
    pts = [_point(m, 0.0, 10.0) for m in (1024, 2048, 4096, 8192)]
    for p, des, cf in zip(pts, (300.0, 50.0, 25.0, 12.0), (300.0, 5.0, 5.0, 5.0)):
        p.floor_predicted_us = 10.0
        p.predicted = {"des": {"fused_us": p.get("fa-only") + des, "paced_us": p.get("fa-only") + cf},
                       "closed-form": {"fused_us": p.get("fa-only") + cf}}
    assert predicted_threshold(pts, "des") == 4096 and predicted_threshold(pts, "closed-form") == 2048
    assert predicted_threshold(pts, "des", "fused-paced") == 2048
    assert predicted_threshold(pts, "no-such-model") is None       # nothing predicted: no threshold
    pts[-1].floor_predicted_us = math.nan                            # an unknown floor is skipped
    assert predicted_threshold(pts, "des") == 4096


def test_threshold_targets_compare_measured_with_each_prediction():
    rows = {t["target"]: t for t in targets({"m_ub_star_measured": 8192, "m_ub_star_predicted": 5000.0,
                                             "m_ub_star_predicted_des": 8192, "headline_model": "des"})}
    assert rows["m_ub_star_measured"]["pass"] is False                 # above eq. 20's M_ub*
    assert rows["m_ub_star_measured_vs_des"]["pass"] is True           # at the DES's threshold
    rows = {t["target"]: t for t in targets({"m_ub_star_measured": 2048, "m_ub_star_predicted_des": 8192,
                                             "headline_model": "des"})}
    assert rows["m_ub_star_measured_vs_des"]["pass"] is False          # more than 2x below it
    assert "m_ub_star_measured_vs_des" not in {t["target"] for t in targets({"headline_model": "closed-form"})}


def test_records_without_fa_a2a_are_exit_2(capsys):
    micro = "calibration/records/h200-nvlink-x2-micro.jsonl"
    assert main(["report", "--experiment", "fa-a2a", "--records", micro]) == 2
    err = capsys.readouterr().err
    assert "no fa-a2a records" in err and err.count("\n") == 1


def test_shipped_records_rebuild_the_report_in_one_command(capsys):
    """The committed GPU records and the shipped host profile, no options: every headline key."""
    doc = _json(capsys, "report", "--experiment", "fa-a2a", "--no-des", "--json")
    rep = doc["experiments"]["fa-a2a"]
    assert rep["platform"] == "h200-pcie-host" and rep["n_points"] >= 10
    assert all(doc[k] is not None for k in HEADLINE_KEYS if k != "m_ub_star_measured" and "_des" not in k)
    assert len(rep["targets"]) == 6                  # no DES: no DES threshold to test against


def test_hiding_ratio_eq21():
    p = Point(1024, None, {"fa-only": 100.0, "fused": 110.0, "serial": 200.0})
    assert p.hiding == pytest.approx(0.9) and p.speedup == pytest.approx(200 / 110)
    assert math.isnan(Point(1024, None, {"fa-only": 100.0, "fused": 110.0, "serial": 99.0}).hiding)


def test_paced_kernel_has_its_own_ratio_hiding_and_threshold():
    p = Point(1024, None, {"fa-only": 100.0, "fused": 130.0, "fused-paced": 101.0, "serial": 200.0})
    assert p.paced_over_fa == pytest.approx(1.01) and p.paced_hiding == pytest.approx(0.99)
    assert math.isnan(Point(1024, None, {"fa-only": 100.0, "fused": 110.0}).paced_over_fa)
    pts = [_point(1024, 300.0, 10.0), _point(2048, 50.0, 10.0), _point(4096, 40.0, 10.0)]
    for p, paced in zip(pts, (150.0, 20.0, 5.0)):
        p.measured["fused-paced"] = p.get("fa-only") + paced
    assert measured_threshold(pts) is None and measured_threshold(pts, "fused-paced") == 2048


def test_shipped_report_has_the_paced_keys(capsys):
    doc = _json(capsys, "report", "--experiment", "fa-a2a", "--no-des", "--json")
    rep = doc["experiments"]["fa-a2a"]
    for key in ("paced_over_fa_above_threshold", "paced_hiding_min_above_threshold", "m_ub_star_measured_paced"):
        assert key in rep
    assert not any("fused-paced" in n for n in doc["notes"])    # the kind is known, not left out
    # the paced kernel is predicted too (closed form here): every swept M, from the record's pace
    assert rep["paced_time_mape"] is not None and 0 < rep["paced_time_mape"] < 50
    paced, = [s for s in rep["series"] if all(s[k] == v for k, v in rep["paced_series"].items())]
    assert paced["errors"]["closed-form"]["paced_time_mape"] == rep["paced_time_mape"]


def test_cc_fence_option_changes_only_the_cc_prediction(files, capsys):
    profile, records = files
    base = ("report", "--experiment", "fa-a2a", "--records", str(records), "--platform", str(profile), "--json")
    docs = {f: _json(capsys, *base, "--cc-fence", f)["experiments"]["fa-a2a"] for f in ("link", "own")}
    assert docs["link"]["cc_fence"] == "link" and docs["own"]["cc_fence"] == "own"
    assert _json(capsys, *base)["experiments"]["fa-a2a"]["cc_fence"] == "link"          # the builder's default
    errs = {f: d["series"][0]["errors"]["des"] for f, d in docs.items()}
    for key in ("fused_time_mape", "paced_time_mape", "e_res_mae_us"):
        assert errs["link"][key] == errs["own"][key] or (math.isnan(errs["link"][key]) and math.isnan(errs["own"][key]))
    code = main(["report", "--experiment", "fa-a2a", "--cc-fence", "sys"])
    err = capsys.readouterr().err
    assert code == 2 and "invalid choice" in err and err.count("\n") == 1


def _series(mainloop, t_fa, paced=False, head_dim=128, ms=(1024, 2048), stagger_us=0.0, timing="burst"):
    from xsim.attention.shape import AttentionShape
    from xsim.report.fa_a2a_points import Series

    pts = []
    for m in ms:
        shape = AttentionShape(seq_len=m, batch=1, heads=8, sp=4, head_dim=head_dim, block_m=128, block_n=128,
                               producers=16)
        meas = {"fa-only": t_fa * m * m / 1024 ** 2}
        if paced:
            meas["fused-paced"] = 1.1 * meas["fa-only"]
        pts.append(Point(m, shape, meas))
    return Series({"head_dim": head_dim, "mainloop": mainloop, "stagger_us": stagger_us, "timing": timing}, pts, None)


def test_headline_is_the_faster_kernel_and_paced_keys_come_from_the_series_that_has_them():
    from xsim.report.fa_a2a import _headline, _paced_series

    slow, fast = _series("triton", 130.0, paced=True), _series("gluon", 100.0)
    d64 = _series("triton", 10.0, head_dim=64, ms=(1024, 2048, 4096))
    assert _headline([slow, fast, d64]) is fast            # d = 128 first, then most points, then fastest
    assert _headline([fast, slow]) is fast and _headline([]) is None
    assert _headline([_series("triton", 130.0, ms=(1024, 2048, 4096)), fast]).key["mainloop"] == "triton"
    staggered = _series("gluon", 90.0, stagger_us=100.0)   # faster FA-only, but staggered: not the headline
    assert _headline([staggered, fast]) is fast and _headline([staggered]) is staggered
    assert _paced_series([slow, fast], fast) is slow       # the headline measured no fused-paced
    assert _paced_series([fast], fast) is fast
    both = _series("gluon", 100.0, paced=True)
    assert _paced_series([slow, both], both) is both


def test_records_without_a_mainloop_are_the_triton_series(files, capsys):
    profile, records = files
    doc = _json(capsys, "report", "--experiment", "fa-a2a", "--records", str(records), "--platform", str(profile),
                "--json", "--no-des")
    rep = doc["experiments"]["fa-a2a"]
    assert [s["mainloop"] for s in rep["series"]] == ["triton"]
    assert rep["headline_series"]["mainloop"] == "triton"
    assert doc["fa_vs_cudnn_min_all_series"] == doc["fa_vs_cudnn_min"]


def test_clocks_of_the_stamped_kinds_flag_the_points_where_dvfs_differs():
    p = Point(16384, None, {"fa-only": 1713.0, "fused": 1786.0}, clock_mhz={"fa-only": 1561.0, "fused": 1708.0})
    assert p.fused_clock_over_fa == pytest.approx(1708 / 1561)
    assert math.isnan(Point(1024, None, {"fa-only": 1.0}).fused_clock_over_fa)
    from xsim.report.fa_a2a_summary import summarize_series

    s = _series("gluon", 100.0)
    s.points[0].clock_mhz.update({"fa-only": 1700.0, "fused": 1710.0})      # within the 2 % band
    s.points[1].clock_mhz.update({"fa-only": 1500.0, "fused": 1650.0})      # 10 % apart
    out = summarize_series(s, [])
    assert out["dvfs_seq_lens"] == [2048] and out["fused_clock_over_fa_max"] == pytest.approx(1.1)


def test_shipped_gluon_series_shows_the_power_capped_points(capsys):
    doc = _json(capsys, "report", "--experiment", "fa-a2a", "--no-des", "--json")
    gluon = [s for s in doc["experiments"]["fa-a2a"]["series"] if s["mainloop"] == "gluon"]
    if not gluon:
        pytest.skip("no Gluon records shipped")
    assert {16384, 32768} <= set(gluon[0]["dvfs_seq_lens"]) and gluon[0]["fused_clock_over_fa_max"] > 1.05


def test_residual_at_the_kernels_own_clock():
    """E_res against FA-only at the fused kernel's SM clock: the timed runs' clock (CLK) wins
    over the stamped run's, and the at-clock hiding takes the A2A store kernel as exposed time."""
    p = Point(1024, None, {"fa-only": 100.0, "fused": 105.0, "a2a-store": 50.0, "serial": 140.0})
    assert math.isnan(p.fa_at_clock_of("fused")) and math.isnan(p.fused_clock_over_fa)
    p.clock_mhz = {"fa-only": 1500.0, "fused": 1650.0}
    assert p.fa_at_clock_of("fused") == pytest.approx(100 * 1500 / 1650)
    assert p.over_fa_at_clock("fused") == pytest.approx(105 / (100 * 1500 / 1650))
    assert p.hiding_at_clock("fused") == pytest.approx(1 - (105 - 100 * 1500 / 1650) / 50)
    p.run_clock_mhz = {"fused": 1500.0}                 # the timed runs ran at FA-only's clock
    assert p.clock("fused") == 1500.0 and p.clock("fa-only") == 1500.0
    assert p.fa_at_clock_of("fused") == pytest.approx(100.0)
    assert p.fused_clock_over_fa == pytest.approx(1.0)


def test_timed_run_clock_reaches_the_report(tmp_path, capsys):
    import numpy as np

    from xsim.stats import Stats
    recs = generate(toy_host(), [1024, 2048, 4096])
    for r in recs:
        if r["kind"] in ("fa-only", "fused"):
            mhz = 1500.0 if r["kind"] == "fa-only" else 1650.0
            r["stats"]["run_clock_mhz"] = Stats.of(np.full(8, mhz)).to_dict()
    path = tmp_path / "clk.jsonl"
    write(recs, path)
    prof = tmp_path / "toy.json"
    save_profile(toy_host(), prof)
    doc = _json(capsys, "report", "--experiment", "fa-a2a", "--records", str(path), "--platform", str(prof),
                "--no-des", "--json")
    s = doc["experiments"]["fa-a2a"]["series"][0]
    assert s["clock_source"] == "timed runs" and s["fused_clock_over_fa_max"] == pytest.approx(1.1)
    e = s["at_clock"]["fused_e_res_us"]
    assert set(e) == {"1024", "2048", "4096"} and all(math.isfinite(v) for v in e.values())
    assert "paced_e_res_us" not in s["at_clock"]          # no fused-paced records, no paced keys


def test_within_wave_spread_gives_the_des_at_one_clock(tmp_path, capsys):
    """FA-only records with the within-wave Q-loop spread: the report also runs the DES with it
    and compares both DES residuals with E_res at one clock (at_clock)."""
    import numpy as np

    from xsim.stats import Stats

    recs = generate(toy_host(), [1024, 2048])
    for r in recs:
        mhz = {"fa-only": 1500.0, "fused": 1650.0, "cc": 1650.0}.get(r["kind"])
        if mhz:
            r["stats"]["run_clock_mhz"] = Stats.of(np.full(8, mhz)).to_dict()
        if r["kind"] == "fa-only":
            r["stats"]["qloop_wave_spread"] = Stats.of(np.full(8, 0.005)).to_dict()
    path, prof = tmp_path / "w.jsonl", tmp_path / "toy.json"
    write(recs, path)
    save_profile(toy_host(), prof)
    doc = _json(capsys, "report", "--experiment", "fa-a2a", "--records", str(path), "--platform", str(prof),
                "--json")
    ac = doc["experiments"]["fa-a2a"]["series"][0]["at_clock"]
    assert set(ac["des_wave_e_res_us"]) == {"1024", "2048"}
    assert set(ac["e_res_mae_us"]) == {"des", "des-wave"} and all(v >= 0 for v in ac["e_res_mae_us"].values())
    assert all(0 <= v < 100 for v in ac["fused_time_mape_at_fa_clock"].values())


def test_headline_is_the_kernel_the_design_test_configures():
    from xsim.platform import resolve_platform
    from xsim.report.fa_a2a import _headline, design_stagger_us

    host = resolve_platform("h200-pcie-host")
    plain = _series("gluon", 100.0)
    want = design_stagger_us(plain, host)                  # 16 programs x 32 KB: above the 329 kB gate
    assert want == pytest.approx(16 * 32768 / (host.drain_rate_gbps * 1e3))
    designed = _series("gluon", 105.0, stagger_us=round(want, 1))
    other = _series("gluon", 90.0, stagger_us=100.0)
    assert _headline([plain, other, designed], host) is designed   # slower FA-only, but as designed
    assert _headline([plain, other], host) is plain                  # no designed series: unstaggered
    assert _headline([plain, designed]) is plain                     # no platform: unstaggered
    assert design_stagger_us(plain, resolve_platform("paper-8gpu")) == 0.0
    assert _headline([designed, plain], resolve_platform("paper-8gpu")) is plain
    steady = _series("gluon", 110.0, timing="steady")       # steady-state timing before the stagger rule
    assert _headline([plain, other, designed, steady], host) is steady


def test_shipped_report_has_the_staggered_series_beside_the_headline(capsys):
    """The shipped records hold the design stagger's run (eq. 10's S* on h200-pcie-host): it is
    the headline, the unstaggered run and the 100 us one are listed beside it."""
    doc = _json(capsys, "report", "--experiment", "fa-a2a", "--no-des", "--json")
    rep = doc["experiments"]["fa-a2a"]
    assert rep["headline_series"]["stagger_us"] == pytest.approx(rep["stagger_design_us"], abs=0.1)
    st = {s["stagger_us"]: s for s in rep["staggered"]}
    assert {0.0, 100.0} <= set(st) and st[100.0]["fused_over_fa_above_threshold"] is not None
    assert "fused_over_fa_above_threshold" in st[0.0]["at_clock"]


def test_figure_names_of_a_fractional_stagger_are_file_names():
    from xsim.report.fa_a2a_figures import figures
    from xsim.report.fa_a2a import FaA2aReport
    from xsim.platform import resolve_platform

    s = _series("gluon", 100.0, stagger_us=82.6)
    s.key.update(block_m=128, sp=4, destination="host")
    rep = FaA2aReport(platform=resolve_platform("h200-pcie-host"), series=[s], engine=None, summary={}, notes=[])
    assert set(figures(rep)) == {"fig11-d128-bm128-n4-host-gluon-stagger82p6us",
                                 "fig11-d128-bm128-n4-host-gluon-stagger82p6us-us"}

