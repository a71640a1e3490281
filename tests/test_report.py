"""``xsim report``: predicted vs measured, JSON contract, HTML, and the experiments without records."""

import json

import pytest

from calibration.synthetic import small_plan, synthetic_records, write_jsonl
from xsim.cli import main

HEADLINE = ("drain_rate_gbps", "capacity_bytes", "t_iss0_us", "period_mape", "issue_mean_mape", "issue_p90_mape",
            "issue_max_mape", "ce_ratio", "n_points")


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rep")
    records, profile = folder / "syn.jsonl", folder / "syn.json"
    write_jsonl(synthetic_records(plan=small_plan()), records)
    assert main(["calibrate", str(records), "-o", str(profile), "--name", "syn"]) == 0
    return records, profile


def _json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_report_json_contract_on_synthetic_records(calibrated, capsys):
    records, profile = calibrated
    capsys.readouterr()
    doc = _json(capsys, "report", "--experiment", "micro", "--records", str(records), "--platform", str(profile),
                "--json")
    for key in HEADLINE:
        assert key in doc and key in doc["experiments"]["micro"]
    micro = doc["experiments"]["micro"]
    assert micro["n_heldout"] > 0 and micro["des_points"] > 0 and micro["des_timed_out"] == 0
    # the DES made the synthetic records, so on held-out points it predicts them to the noise
    des = micro["heldout_errors_percent"]["des"]
    assert des["aligned"]["period_mape"] < 3 and des["free_running"]["issue_mean_mape"] < 5
    assert des["aligned"]["issue_p90_mape"] >= 0  # the DES has tails (the max: none measured, below)
    assert micro["heldout_errors_percent"]["mode-aware"]["aligned"]["issue_p90_mape"] is None  # a closed form has none
    assert len(micro["records_time_utc"]) == 2
    assert doc["ce_ratio"] == pytest.approx(1 / 1.05, rel=0.03)
    # synthetic records carry no max-over-CTA issue (and no traces): the max MAPE has no points
    assert micro["n_issue_max_points"] == 0 and micro["issue_max_source"]["none"] == micro["n_heldout"]
    assert des["aligned"]["n_max_points"] == 0 and des["aligned"]["issue_max_mape"] is None


def test_report_heldout_all_counts_every_record(calibrated, capsys):
    records, profile = calibrated
    capsys.readouterr()
    args = ("report", "--experiment", "micro", "--records", str(records), "--platform", str(profile), "--no-des",
            "--json")
    split = _json(capsys, *args)["experiments"]["micro"]
    every = _json(capsys, *args, "--heldout", "all")["experiments"]["micro"]
    assert split["n_heldout"] < every["n_heldout"] == every["n_points"] == split["n_points"]
    assert "--heldout all" in every["split"] and every["split"] != split["split"]


def test_report_heldout_bad_choice_is_one_line_exit_2(calibrated, capsys):
    records, profile = calibrated
    assert main(["report", "--experiment", "micro", "--records", str(records), "--heldout", "some"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--heldout" in err and len(err.splitlines()) == 1


def test_report_html_and_all_experiments(calibrated, capsys, tmp_path):
    records, profile = calibrated
    out = tmp_path / "report.html"
    doc = _json(capsys, "report", "--records", str(records), "--platform", str(profile), "--no-des",
                "-o", str(out), "--json")
    text = out.read_text()
    assert text.startswith("<!doctype html>") and text.count("plotly.js") >= 1 and "(c) isolated burst" in text
    # title, then per experiment: headline, captioned figures, folded details; one section per experiment
    body = text[text.index("</head>"):]
    assert body.index("xsim-headline") < body.index("xsim-figure") < body.index("<details>")
    assert body.count("<figcaption>") == body.count("class='xsim-figure'") >= 4 and body.count("<section") == 3
    assert "R, drain rate" in body and "GB/s (95% CI" in body and "every point" in body and "raw summary" in body
    assert set(doc["experiments"]) == {"micro", "moe", "fa-a2a"}
    assert "no moe records" in doc["experiments"]["moe"]["note"]
    assert len(doc["png"]) >= 4 or any("PNG skipped" in n for n in doc["notes"])


@pytest.mark.parametrize("experiment", ["moe", "fa-a2a"])   # they ship for the host link only
def test_report_without_records_for_the_experiment_exits_2(capsys, experiment):
    assert main(["report", "--experiment", experiment, "--platform", "h200-nvlink-x2"]) == 2
    err = capsys.readouterr().err
    assert f"no {experiment} records exist for h200-nvlink-x2" in err and err.count("\n") == 1


def test_report_all_shipped_platforms_on_one_page(capsys, tmp_path):
    """Without --platform: every shipped platform with records, a section per (platform, experiment)."""
    doc = _json(capsys, "report", "--no-des", "--json")
    assert set(doc["platforms"]) == {"h200-nvlink-x2", "h200-pcie-host", "h100-pcie-host"}
    for name in ("h200-pcie-host", "h100-pcie-host"):      # one GPU each, over its host link
        host = doc["platforms"][name]
        assert set(host["experiments"]) == {"micro", "moe", "fa-a2a"} and 50 < host["drain_rate_gbps"] < 55
        assert host["n_configs"] >= 16 and host["m_ub_star_predicted"] > 0
    assert "note" in doc["platforms"]["h200-nvlink-x2"]["experiments"]["moe"]


def test_report_on_shipped_records_closed_form(capsys):
    doc = _json(capsys, "report", "--experiment", "micro", "--no-des", "--json")
    assert doc["experiments"]["micro"]["platform"] == "h200-nvlink-x2"
    assert 300 < doc["drain_rate_gbps"] < 480 and doc["n_points"] > 100


def test_report_bad_records_file_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert main(["report", "--records", str(bad)]) == 2
    assert "bad.jsonl:1: broken JSON line" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["h200-nvlink-x2", "h200-pcie-host"])
def test_trace_panels_from_the_shipped_traces(name):
    from xsim.platform import resolve_platform
    from xsim.report import micro_traces

    traces = micro_traces.shipped_traces(name)
    assert traces, f"{name} ships its per-burst traces"
    assert all(t["meta"].get("destination", "peer") == ("host" if "pcie" in name else "peer") for t in traces.values())
    figs = micro_traces.figures(resolve_platform(name), traces)
    assert set(figs) == {"e_unfair_service", "f_phase_drift"}
    name = next(n for n, t in traces.items() if t["meta"]["kind"] == "periodic" and not t["meta"]["aligned"]
                and t["meta"]["gap_us"] == 0 and t["meta"]["producers"] == 132)
    spread = micro_traces.start_spread(traces[name])
    assert spread[-1] > 10 * spread[1]  # free-running producers drift out of phase


@pytest.mark.parametrize("name", ["h200-nvlink-x2", "h200-pcie-host"])
def test_report_takes_the_max_over_ctas_from_the_shipped_traces(capsys, name):
    micro = _json(capsys, "report", "--experiment", "micro", "--platform", name, "--no-des", "--json")["experiments"]["micro"]
    # records measured before issue_max_us: the max comes from the traced points only (one held-out aligned)
    assert micro["issue_max_source"]["record"] == 0 and micro["issue_max_source"]["trace"] >= 3
    assert micro["n_issue_max_points"] == 1
    assert micro["issue_max_mape"] is None and micro["issue_p90_mape"] is None   # a closed form has no tails


def test_records_without_platform_take_the_platform_measured_on_their_link(tmp_path):
    """--records alone: host-link records are predicted on h200-pcie-host, not the default."""
    import dataclasses

    from calibration.records import RecordError, load_records
    from xsim.commands.report import _platform_of
    from xsim.platform import shipped_platforms

    platforms = shipped_platforms()
    host = load_records(["calibration/records/h200-pcie-host-micro.jsonl"])
    nvlink = load_records(["calibration/records/h200-nvlink-x2-micro.jsonl"])
    assert _platform_of(host, platforms) == "h200-pcie-host"
    assert _platform_of(nvlink, platforms) == "h200-nvlink-x2"
    h100 = load_records(["calibration/records/h100-pcie-host-micro.jsonl"])   # the same link, another GPU
    assert _platform_of(h100, platforms) == "h100-pcie-host"
    path = tmp_path / "syn.jsonl"
    write_jsonl(synthetic_records(plan=small_plan()), path)
    assert _platform_of(load_records([path]), platforms) is None     # link "none": the default
    twin = dataclasses.replace(platforms["h200-pcie-host"], name="twin")
    with pytest.raises(RecordError, match="give --platform"):
        _platform_of(host, {**platforms, "twin": twin})
