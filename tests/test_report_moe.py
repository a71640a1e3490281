"""xsim report --experiment moe on records these tests write (test data, never shipped)."""

import json
import math

import pytest

from xsim.cli import main
from xsim.moe.contention_model import GEMM_ONLY

PLATFORM = {"gpu": "test-gpu", "gpu_count": 1, "sms": 132, "driver": "test", "link": "test"}
SMALL = {"tokens": 256, "hidden": 512, "intermediate": 256, "experts": 8, "topk": 2}


def stats(median, p10=None, p90=None):
    return {"mean": median, "median": median, "p10": p10 or median, "p90": p90 or median,
            "min": p10 or median, "max": p90 or median, "n": 20}


def record(kind, params, stat):
    return {"schema": "xstage.record/1", "experiment": "moe", "kind": kind, "params": params, "stats": stat,
            "check": {"ok": True, "max_abs_err": 0.0}, "platform": PLATFORM, "commit": "test", "dirty": True,
            "time_utc": "2026-12-01T00:00:00Z"}


def write_records(path):
    """Two configs x both schedules, a mainloop point and two GEMM points: made-up numbers."""
    recs = []
    for config, routing, wave_us, int_us in (("moe1-qwen3-30b-bf16-zipf-4096", "zipf", 120.0, 100.0),
                                             ("not-a-scenario", "balanced", 90.0, 95.0)):
        for schedule, t in (("wave", wave_us), ("interleaved", int_us)):
            p = {"config": config, "schedule": schedule, **SMALL, "routing": routing, "lead": 4, "destination": "host"}
            recs.append(record("kernel", p, {"kernel_us": stats(t), "span_us": stats(3.0, 1.0, 9.0),
                                             "stall_us": stats(0.5), "wait_us": stats(0.25),
                                             "l1_mainloop_us": stats(4.0),
                                             "l2_mainloop_us": stats(2.0)}))
    recs.append(record("mainloop", {"precision": "bf16", "block_m": 128, "block_n": 128, "k_dim": 256, "kind": "l2"},
                       {"mainloop_us": stats(2.0)}))
    for m, t, c in ((128, 30.0, 8.0), (128, 10.0, 8.0), (256, 20.0, 18.0)):   # m 128 re-measured
        recs.append(record("gemm", {"precision": "bf16", "m": m, "n": 256, "k": 512, "path": "l1"},
                           {"triton_us": stats(t), "cublas_us": stats(c)}))
    for m, t, c in ((128, 40.0, 30.0), (256, 50.0, 45.0)):      # the batched diagnostic
        recs.append(record("gemm_batched", {"precision": "bf16", "m": m, "n": 256, "k": 512, "path": "l1",
                                            "experts": 4}, {"triton_us": stats(t), "cublas_us": stats(c)}))
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(path)


def test_moe_report_json_keys(capsys, tmp_path):
    path = write_records(tmp_path / "test-moe.jsonl")
    assert main(["report", "--experiment", "moe", "--records", path, "--platform", "paper-8gpu", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    keys = {"n_configs", "geomean_speedup_measured", "geomean_speedup_predicted", "speedup_abs_err_max",
            "geomean_speedup_skewed_measured", "selector_geomean", "selector_worst", "gemm_vs_cublas_min"}
    assert keys <= set(doc)
    assert doc["n_configs"] == 2
    assert doc["geomean_speedup_measured"] == pytest.approx((1.2 * 90 / 95) ** 0.5)
    assert doc["gemm_vs_cublas_min"] == pytest.approx(0.8)                 # batched points apart
    assert doc["gemm_batched_vs_cublas_min"] == pytest.approx(0.75)
    assert doc["gemm_batched_vs_cublas_geomean"] == pytest.approx((0.75 * 0.9) ** 0.5)
    assert doc["speedup_abs_err_max"] >= 0 and doc["geomean_speedup_predicted"] > 0
    assert 0 < doc["selector_worst"] <= doc["selector_geomean"]
    moe = doc["experiments"]["moe"]
    assert len(moe["paper_table2"]) == 7 and "closed_span_us" in moe["paper_table2"][0]
    row = next(r for r in moe["table2"] if r["config"] == "not-a-scenario")   # the builder's defaults
    assert row["span_measured_us"] == [3.0, 3.0] and row["wait_measured_us"] == [0.25, 0.25]
    assert all(x >= 0 for x in row["eq15_predicted_us"] + row["wait_predicted_us"])
    assert "l2:records" in moe["compute_model"]
    assert doc["kernel_time_mape"] >= 0 and doc["kernel_time_mape_local"] is None   # no local records: null


def test_moe_report_html(capsys, tmp_path):
    path = write_records(tmp_path / "test-moe.jsonl")
    out = tmp_path / "r.html"
    assert main(["report", "--experiment", "moe", "--records", path, "--platform", "paper-8gpu", "--no-des",
                 "-o", str(out)]) == 0
    text = out.read_text()
    assert "moe_fig8_speedup" in text and "moe_fig10_span" in text and "Table 2" in text
    assert text.count("<figcaption>") == 2


def test_no_moe_records_is_one_line(capsys, tmp_path):
    path = tmp_path / "other.jsonl"
    path.write_text(json.dumps({**record("kernel", {}, {}), "experiment": "micro", "kind": "nccl"}) + "\n")
    assert main(["report", "--experiment", "moe", "--records", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no moe records" in err


def test_kernel_time_errors_over_the_link_and_locally():
    from xsim.report.moe import ConfigRow, kernel_time_errors

    k = lambda w, i: {"wave": {"kernel_us": w}, "interleaved": {"kernel_us": i}}  # noqa: E731
    rows = [ConfigRow("a", "zipf", k(100.0, 80.0), predicted=k(110.0, 80.0),
                      measured_local=k(50.0, 40.0), predicted_local=k(45.0, 40.0)),
            ConfigRow("b", "balanced", k(200.0, 200.0), predicted=k(200.0, 150.0))]   # no local run
    e = kernel_time_errors(rows)
    assert e["kernel_time_mape"] == pytest.approx(100 * (0.1 + 0 + 0 + 0.25) / 4)
    assert e["kernel_time_err_max"] == pytest.approx(25.0)
    assert e["kernel_time_mape_local"] == pytest.approx(100 * 0.1 / 2)
    assert e["kernel_time_err_max_local"] == pytest.approx(10.0)
    none = kernel_time_errors([ConfigRow("c", "hot", k(1.0, 1.0))])
    assert all(v != v for v in none.values())                   # NaN: nothing to compare


def test_without_link_keeps_the_issue_costs_and_drops_the_gate():
    from xsim.load_gate import LoadGate
    from xsim.platform import resolve_platform
    from xsim.report.moe import without_link

    p = resolve_platform("h200-pcie-host")
    assert p.load_gate is not None and p.load_gate == LoadGate(p.load_gate.threshold_bytes, p.load_gate.scope)
    q = without_link(p)
    assert q.load_gate is None and q.drain_rate_gbps == pytest.approx(1e3 * p.drain_rate_gbps)
    assert q.t_iss0_us(132, 32768) == p.t_iss0_us(132, 32768)


def test_moe_report_averages_spread_seeds(capsys, tmp_path):
    path = write_records(tmp_path / "test-moe.jsonl")
    base = ["report", "--experiment", "moe", "--records", path, "--platform", "paper-8gpu", "--json"]
    assert main([*base, "--moe-spread-seeds", "2", "--moe-spread-seed", "3"]) == 0
    moe = json.loads(capsys.readouterr().out)["experiments"]["moe"]
    assert moe["spread_seeds"] == [3, 4] and 0 <= moe["n_speedup_within_0_05"] <= moe["n_configs"]
    assert main(base) == 0
    assert json.loads(capsys.readouterr().out)["experiments"]["moe"]["spread_seeds"] == [0, 3]   # the default: 4
    assert main([*base, "--moe-spread-seeds", "0"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_moe_report_predicted_level(capsys, tmp_path, monkeypatch):
    from xsim.report import moe

    path = write_records(tmp_path / "test-moe.jsonl")
    with open(path, "a") as fh:   # the pre-pass's tensor-core times come from GEMM-only mainloops of the shape
        for kind, t in (("l1", 6.0), ("l2", 3.0)):
            p = {"source": GEMM_ONLY, "precision": "bf16", "block_m": 128, "block_n": 128, "kind": kind, "m": 256,
                 "hidden": 512, "intermediate": 256, "k_dim": 512 if kind == "l1" else 256}
            fh.write(json.dumps(record("mainloop", p, {"mainloop_us": stats(t)})) + "\n")
    seen, simulate = [], moe.builder.simulate
    monkeypatch.setattr(moe.builder, "simulate", lambda params, *a, **k: seen.append(params) or simulate(params, *a, **k))
    base = ["report", "--experiment", "moe", "--records", path, "--platform", "paper-8gpu", "--json",
            "--moe-spread-seeds", "1"]
    assert main([*base, "--moe-level", "records"]) == 0
    assert json.loads(capsys.readouterr().out)["experiments"]["moe"]["moe_level"] == "records"
    assert seen and all(p["compute"] == "auto" for p in seen)
    for given in (["--moe-level", "predicted"], []):   # auto: predicted, the GEMM-only records are given
        seen.clear()
        assert main([*base, *given]) == 0
        doc = json.loads(capsys.readouterr().out)["experiments"]["moe"]
        assert doc["moe_level"] == "predicted" and doc["n_configs"] == 2 and math.isfinite(doc["speedup_abs_err_max"])
        assert len(seen) == 2 and all(p[k] == v for p in seen for k, v in moe.PREDICTED_LEVEL.items())
    assert main([*base, "--moe-level", "measured"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_predicted_level_without_gemm_only_records_is_one_line(capsys, tmp_path):
    path = write_records(tmp_path / "test-moe.jsonl")   # kernel mainloops only, no GEMM-only ones
    assert main(["report", "--experiment", "moe", "--records", path, "--platform", "paper-8gpu", "--json",
                 "--moe-spread-seeds", "1", "--moe-level", "predicted"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no GEMM-only mainloop record" in err and "--moe-level records" in err


def test_auto_level_is_records_without_gemm_only_records(capsys, tmp_path):
    path = write_records(tmp_path / "test-moe.jsonl")
    assert main(["report", "--experiment", "moe", "--records", path, "--platform", "paper-8gpu", "--json",
                 "--moe-spread-seeds", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["experiments"]["moe"]["moe_level"] == "records"
