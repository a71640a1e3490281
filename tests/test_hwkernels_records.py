import json
import os
from pathlib import Path

import pytest

from hwkernels import records

STATS = {"issue_us": {"mean": 1.0, "median": 1.0, "p10": 1.0, "p90": 1.0, "min": 1.0,
                      "max": 1.0, "n": 3}}
PLATFORM = {"gpu": "NVIDIA H200", "gpu_count": 2}


def record(ok=True, **kw):
    return records.make_record("micro", "periodic", {"producers": 1}, STATS,
                               {"ok": ok, "max_abs_err": 0.0 if ok else 5.0}, PLATFORM,
                               "abc123", False, time_utc="2026-11-29T20:00:00Z", **kw)


def test_record_has_schema_fields():
    r = record()
    assert list(r) == ["schema", "experiment", "kind", "params", "stats", "check",
                       "platform", "commit", "dirty", "time_utc"]
    assert r["schema"] == "xstage.record/1" and r["stats"] == STATS


def test_failed_check_carries_no_timing():
    r = records.make_record("micro", "ce-copy", {}, {"kernel_us": STATS["issue_us"]},
                            {"ok": False, "max_abs_err": 3.0}, PLATFORM, "x", None, gbps=100.0)
    assert r["stats"] == {} and "gbps" not in r and r["check"]["ok"] is False


def test_a_non_finite_error_is_recorded_as_null(tmp_path: Path):
    r = records.make_record("moe", "kernel", {}, None, {"ok": False, "max_abs_err": float("inf")},
                            PLATFORM, "x", None)
    assert r["check"] == {"ok": False, "max_abs_err": None}
    records.append_record(tmp_path / "r.jsonl", r)      # JSON has no inf: null instead
    assert json.loads((tmp_path / "r.jsonl").read_text())["check"]["max_abs_err"] is None


def test_baseline_gbps_and_bad_inputs():
    assert record(gbps=390.5)["gbps"] == 390.5
    with pytest.raises(ValueError, match="kind"):
        records.make_record("micro", "bogus", {}, None, {"ok": True}, {}, "x", None)
    with pytest.raises(ValueError, match="misses"):
        records.make_record("micro", "periodic", {}, {"issue_us": {"mean": 1}}, {"ok": True},
                            {}, "x", None)


def test_append_is_one_line_per_record(tmp_path: Path):
    path = tmp_path / "sub" / "r.jsonl"
    records.append_record(path, record())
    records.append_record(path, record())
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["commit"] == "abc123" for line in lines)


def test_append_after_broken_line_keeps_new_record_whole(tmp_path: Path):
    path = tmp_path / "r.jsonl"
    records.append_record(path, record())
    with open(path, "a") as f:
        f.write('{"schema": "xstage.rec')          # a run killed mid-write
    records.append_record(path, record())
    lines = path.read_text().split("\n")
    assert json.loads(lines[0]) and json.loads(lines[2])
    assert lines[1].startswith('{"schema"') and lines[3] == ""
    with pytest.raises(ValueError, match=r"r.jsonl:2: broken record line"):
        records.read_records(path)


def test_append_rejects_nan(tmp_path: Path):
    bad = record()
    bad["stats"]["issue_us"]["mean"] = float("nan")
    with pytest.raises(ValueError):
        records.append_record(tmp_path / "r.jsonl", bad)
    assert not (tmp_path / "r.jsonl").exists() or os.path.getsize(tmp_path / "r.jsonl") == 0


SHIPPED = Path(__file__).resolve().parent.parent / "calibration" / "records"


@pytest.mark.parametrize("name", ["h200-nvlink-x2-micro.jsonl", "h200-nvlink-x2-micro-ring.jsonl"])
def test_shipped_records_follow_the_schema(name):
    path = SHIPPED / name
    if not path.exists():
        pytest.skip("no shipped records")
    recs = records.read_records(path)
    assert recs
    for r in recs:
        assert r["schema"] == "xstage.record/1" and r["experiment"] == "micro"
        assert r["kind"] in records.MICRO_KINDS
        assert r["check"]["ok"] is True
        p = r["params"]
        for key in ("producers", "burst_bytes", "gap_us", "bursts", "warmup_bursts", "aligned",
                    "mechanism", "threads", "target", "src_rank", "dst_rank", "world_size"):
            assert key in p
        assert "kernel_us" in r["stats"]
        for s in r["stats"].values():
            assert set(s) == set(records.STAT_KEYS)
            assert s["min"] <= s["p10"] <= s["median"] <= s["p90"] <= s["max"]
        if r["kind"] in ("ce-copy", "nccl"):
            assert r["gbps"] > 0
        else:
            assert {"issue_us", "burst_issue_us", "period_us"} <= set(r["stats"])
