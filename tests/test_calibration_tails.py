"""Measured tails (max over CTAs) from records or traces, the threads term's fit, the report's tail MAPEs."""

import json

import numpy as np
import pytest

from calibration.records import Record, load_shipped_records
from calibration.tails import issue_max_of_trace, load_trace_tails, measured_issue_max, point_key
from calibration.threads import fit_thread_terms
from xsim.platform import resolve_platform
from xsim.report.micro import Row, _tail_mapes

PARAMS = {"producers": 2, "burst_bytes": 4096, "gap_us": 1.23456, "aligned": True, "mechanism": "st.v4",
          "threads": 256, "target": "remote", "warmup_bursts": 1}


def _record(stats, params=PARAMS):
    return Record({"kind": "periodic", "params": params, "stats": stats}, "r.jsonl", 1)


def _trace(folder, meta=PARAMS):
    # 2 runs x 2 producers x 3 bursts; burst 0 is warm-up. Issue = end - start.
    start = np.zeros((2, 2, 3))
    end = np.array([[[9.0, 1.0, 2.0], [9.0, 3.0, 1.0]], [[9.0, 2.0, 2.0], [9.0, 1.0, 5.0]]])
    np.savez(folder / "t.npz", start_us=start, end_us=end, smid=np.array([3, 1]),
             meta=np.array(json.dumps({**meta, "kind": "periodic"})))
    return start, end


def test_max_over_ctas_from_a_trace(tmp_path):
    start, end = _trace(tmp_path)
    # per (run, burst) max over producers: run 0: 3, 2; run 1: 2, 5 -> mean 3.0
    assert issue_max_of_trace(start, end, 1) == pytest.approx(3.0)
    tails = load_trace_tails(tmp_path)
    hit = tails[point_key("periodic", {**PARAMS, "gap_us": 1.2346})]   # gaps compared to 3 decimals
    assert hit["issue_max_us"] == pytest.approx(3.0) and hit["name"] == "t"
    assert load_trace_tails(None) == {}


def test_records_stat_wins_then_the_trace_then_nothing(tmp_path):
    _trace(tmp_path)
    tails = load_trace_tails(tmp_path)
    assert measured_issue_max(_record({"issue_max_us": {"mean": 4.5}}), tails) == (4.5, "record")
    assert measured_issue_max(_record({}), tails) == (pytest.approx(3.0), "trace")
    other = {**PARAMS, "producers": 4}
    value, source = measured_issue_max(_record({}, other), tails)
    assert source == "none" and np.isnan(value)


def _row(aligned, p90, issue_max, pred):
    return Row("periodic", 2, 4096, 0.0, aligned, True,
               {"issue_mean": 1.0, "issue_p90": p90, "issue_max": issue_max}, {"m": pred})


def test_tail_mapes_use_p90_everywhere_and_max_on_aligned_points_only():
    assert np.isnan(_tail_mapes([_row(True, 1.0, 1.0, {"issue_us": 1.0})], "m")["issue_max_mape"])
    rows = [_row(True, 2.0, 4.0, {"issue_us": 1.0, "issue_p90_us": 2.2, "issue_max_us": 3.0}),
            _row(False, 4.0, 8.0, {"issue_us": 1.0, "issue_p90_us": 3.0, "issue_max_us": 8.0}),
            _row(True, 1.0, 1.0, {"issue_us": 1.0})]     # a closed form: no tails, counted nowhere
    out = _tail_mapes(rows, "m")
    assert out["issue_p90_mape"] == pytest.approx((10 + 25) / 2)
    assert out["issue_max_mape"] == pytest.approx(25.0) and out["n_max_points"] == 2  # 2 aligned with a max


@pytest.mark.parametrize("name", ["h200-pcie-host", "h200-nvlink-x2"])
def test_threads_term_predicts_the_heldout_k(name):
    platform = resolve_platform(name)
    rs = load_shipped_records(platform=name)
    model, summary = fit_thread_terms(rs, "st.v4", 256, platform.issue, platform.capacity,
                                      platform.drain_rate_gbps, 66)
    assert set(summary["terms"]) == {"128", "256", "512", "1024"} and summary["heldout_n_points"] >= 3
    assert summary["heldout_issue_mape_with"] < 0.5 * summary["heldout_issue_mape_without"]
    assert model.t_iss0_us(132, 8192, 256) == platform.issue.t_iss0_us(132, 8192)
