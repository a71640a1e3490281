"""The CLI contract: JSON keys, overrides, and one-line errors with exit code 2."""

import json

import pytest

from xsim.cli import main

MODEL_KEYS = {"t_issue_us", "t_period_us", "delta_t_issue_us", "g_star_us", "q_peak_bytes",
              "t_issue_isolated_us", "rate_bound_ok", "capacity_bound_ok"}


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr().out
    return json.loads(out)


def test_model_json_has_the_contract_keys(capsys):
    doc = run_json(capsys, "model", "--volume-bytes", "4.625MiB", "--gap-us", "2", "--producers", "148",
                   "--platform", "paper-8gpu")
    assert MODEL_KEYS <= set(doc)
    assert doc["g_star_us"] == pytest.approx(6.0, abs=0.01)
    assert doc["rate_bound_ok"] is False and doc["capacity_bound_ok"] is True


def test_platform_options_override_the_profile(capsys):
    doc = run_json(capsys, "model", "--volume-bytes", "1000000", "--gap-us", "0", "--platform", "paper-8gpu",
                   "--t-iss0-us", "0.5", "--drain-gbps", "1000", "--capacity-bytes", "100000")
    assert doc["inputs"]["t_iss0_us"] == 0.5 and doc["inputs"]["drain_rate_gbps"] == 1000
    assert doc["t_issue_us"] == pytest.approx(1.0)            # V/R = 1 us > T_iss0
    assert doc["t_issue_isolated_us"] == pytest.approx(0.9)   # (V - Q)/R


def test_simulate_json_and_out_dir(capsys, tmp_path):
    doc = run_json(capsys, "simulate", "periodic", "--platform", "paper-8gpu", "--set", "producers=8",
                   "--set", "bursts=40", "--set", "warmup_bursts=10", "--set", "gap_us=1", "--out", str(tmp_path))
    for key in ("period_us", "issue_us"):
        assert set(doc[key]) >= {"mean", "median", "p10", "p90"}
    assert doc["makespan_us"] > 0
    assert doc["engine"] == "fast"  # the default; --engine simpy is the reference
    assert doc["period_us"]["mean"] == pytest.approx(doc["closed_form"]["period_us"], rel=1e-6)
    names = {p.name for p in tmp_path.iterdir()}
    assert {"tiles.csv", "qtrace.csv", "summary.json", "index.html", "plotly.min.js"} <= names
    page = (tmp_path / "index.html").read_text()
    assert page.count("class='xsim-figure'") == 3 and "src='plotly.min.js'" in page and "cdn.plot.ly" not in page
    header = (tmp_path / "tiles.csv").read_text().splitlines()[0].split(",")
    assert {"producer", "kind", "mainloop_start", "mainloop_end", "issue_start", "issue_end", "drain_end",
            "stall_us"} <= set(header)
    assert len((tmp_path / "tiles.csv").read_text().splitlines()) == 1 + 2 * 8 * 40  # burst + gap tiles


def test_listings(capsys):
    assert "paper-8gpu" in run_json(capsys, "platforms")["platforms"]
    assert {"periodic", "isolated"} <= set(run_json(capsys, "scenarios"))


def _bad_profile(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"schema": "xstage.platform/1", "name": "x"}')
    return str(path)


def _bad_toml(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("name = \n")
    return str(path)


def _unknown_builder(tmp_path):
    path = tmp_path / "u.toml"
    path.write_text('name = "u"\nbuilder = "nope"\n')
    return str(path)


@pytest.mark.parametrize("argv, message", [
    (["simulate", "no-such-scenario"], "unknown scenario 'no-such-scenario'"),
    (["simulate", "{bad_toml}"], "is not valid TOML"),
    (["simulate", "{unknown_builder}"], "unknown builder 'nope'"),
    (["simulate", "periodic", "--set", "frobnicate=1"], "unknown key 'frobnicate'"),
    (["simulate", "periodic", "--set", "gap_us"], "--set expects KEY=VALUE"),
    (["simulate", "periodic", "--set", "burst_bytes=0"], '"burst_bytes" must be > 0'),
    (["simulate", "periodic", "--set", "producers=-3"], '"producers" must be >= 1'),
    (["simulate", "periodic", "--set", "gap_us=-1"], '"gap_us" must be >= 0'),
    (["simulate", "periodic", "--set", "gap_us=2MB"], "has unit 'MB'"),
    (["simulate", "periodic", "--set", "bursts=2.5"], "not a whole number"),
    (["simulate", "periodic", "--engine", "warp"], "invalid choice"),
    (["model", "--volume-bytes", "0", "--gap-us", "1"], "--volume-bytes must be > 0"),
    (["model", "--volume-bytes", "-5", "--gap-us", "1"], "--volume-bytes must be > 0"),
    (["model", "--volume-bytes", "1MB", "--gap-us", "-1"], "--gap-us must be >= 0"),
    (["model", "--volume-bytes", "1MB", "--gap-us", "1", "--drain-gbps", "0"], "--drain-gbps must be > 0"),
    (["model", "--volume-bytes", "1MB", "--gap-us", "1", "--platform", "{bad_profile}"], "missing the key"),
    (["model", "--volume-bytes", "1MB", "--gap-us", "1", "--platform", "nope"], "unknown platform 'nope'"),
    (["model", "--volume-bytes", "1us", "--gap-us", "1"], "has unit 'us'"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, argv, message):
    paths = {"bad_profile": _bad_profile(tmp_path), "bad_toml": _bad_toml(tmp_path),
             "unknown_builder": _unknown_builder(tmp_path)}
    argv = [a.format(**paths) for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xsim: error:") and message in lines[0]
    assert "Traceback" not in captured.err


@pytest.mark.parametrize("argv, message", [
    (["bench", "micro", "--out", "r.jsonl"], "no GPUs found: xsim bench needs NVIDIA GPUs"),
    (["bench", "moe", "--out", "r.jsonl", "--target", "host"], "no GPUs found: xsim bench needs NVIDIA GPUs"),
    (["bench", "fa-a2a", "--out", "r.jsonl", "--target", "host", "--mainloop", "gluon"],
     "no GPUs found: xsim bench needs NVIDIA GPUs"),
    (["bench", "moe", "--out", "r.jsonl", "--target", "host", "--mainloop", "gluon"],
     "--mainloop is an fa-a2a option, not one of moe"),
])
def test_bench_without_gpus_or_kernels_says_so(capsys, monkeypatch, argv, message):
    import hwkernels.launch

    monkeypatch.setattr(hwkernels.launch, "gpu_count", lambda: 0)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
