"""The fa-a2a report's ratio targets counted over repeat runs of the headline series (generated records)."""

import json

import pytest

from fa_a2a_records import generate, toy_host

SEQ_LENS = [1024, 2048, 4096, 8192, 16384, 32768]


def _recordset(records, name):
    from calibration.records import parse_texts

    return parse_texts([(name, "".join(json.dumps(r) + "\n" for r in records).encode())])


def test_ratio_targets_counted_over_the_headline_series_repeats():
    from xsim.report import fa_a2a

    platform = toy_host()
    shipped = _recordset(generate(platform, SEQ_LENS, seed=1), "toy-host-fa-a2a.jsonl")
    slow = generate(platform, [16384, 32768], extra_issue_us=400.0, seed=2)     # the same series, a worse run
    other = generate(platform, [16384, 32768], block_m=64, seed=3)              # another series: not counted
    repeats = [("rep-slow.jsonl", _recordset(slow, "rep-slow.jsonl")), ("rep-other.jsonl", _recordset(other, "o"))]
    rep = fa_a2a.build(shipped, platform, engine=None, repeats=repeats)
    runs = rep.summary["over_runs"]
    assert [r["run"] for r in runs["runs"]] == ["shipped", "rep-slow.jsonl"]
    m_ub = rep.summary["m_ub_star_predicted"]
    by_m = {r["params"]["seq_len"]: {} for r in slow}
    for r in slow:
        by_m[r["params"]["seq_len"]][r["kind"]] = r["stats"]["kernel_us"]["median"]
    want = max(v["fused"] / v["fa-only"] for m, v in by_m.items() if m >= 2 * m_ub)
    assert runs["runs"][1]["fused_over_fa_above_threshold"] == pytest.approx(want)
    assert runs["runs"][0]["fused_over_fa_above_threshold"] == rep.summary["fused_over_fa_above_threshold"]
    ratio = runs["fused_over_fa_above_threshold"]
    assert ratio["n_runs"] == 2 and ratio["n_pass"] == sum(v <= 1.02 for v in ratio["values"])
    row = {t["target"]: t for t in rep.summary["targets"]}
    assert row["fused_over_fa_above_threshold"]["runs_pass"] == f"{ratio['n_pass']} of 2"
    assert "runs_pass" not in row["fused_time_mape"]
    # without repeats (a report on given records) nothing is counted
    assert "over_runs" not in fa_a2a.build(shipped, platform, engine=None).summary
