"""Reading records: every bad input is a RecordError naming the file and line."""

import json

import pytest

from calibration.records import RecordError, load_records, parse_texts

GOOD = {"schema": "xstage.record/1", "experiment": "micro", "kind": "isolated",
        "params": {"producers": 4, "burst_bytes": 4096, "gap_us": 20.0, "aligned": True, "mechanism": "st.v4"},
        "stats": {"issue_us": {"mean": 1.0, "median": 1.0, "p10": 1.0, "p90": 1.0, "min": 1.0, "max": 1.0, "n": 4}},
        "check": {"ok": True, "max_abs_err": 0.0},
        "platform": {"gpu": "G", "gpu_count": 2, "sms": 132, "driver": "1"}, "commit": "abc", "time_utc": "t"}


def _write(tmp_path, lines, name="r.jsonl"):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _rec(**changes):
    rec = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if value is None:
            rec.pop(key)
        else:
            rec[key] = value
    return json.dumps(rec)


def test_good_records_load_with_hash(tmp_path):
    rs = load_records([_write(tmp_path, [_rec(), _rec()])])
    assert len(rs.records) == 2 and rs.records[1].where == "r.jsonl:2"
    assert len(rs.sha256) == 64 and rs.files[0][0] == "r.jsonl"
    assert rs.sha256 == load_records([tmp_path / "r.jsonl"]).sha256


def test_broken_line_names_file_and_line(tmp_path):
    path = _write(tmp_path, [_rec(), '{"schema": "xstage.record/1", "exp'])
    with pytest.raises(RecordError, match=r"r\.jsonl:2: broken JSON line"):
        load_records([path])


def test_missing_field_names_the_field(tmp_path):
    with pytest.raises(RecordError, match=r"r\.jsonl:1: record is missing 'platform'"):
        load_records([_write(tmp_path, [_rec(platform=None)])])


def test_missing_stat_key(tmp_path):
    bad = json.loads(_rec())
    del bad["stats"]["issue_us"]["p90"]
    with pytest.raises(RecordError, match=r"r\.jsonl:1: stats \"issue_us\" is missing p90"):
        load_records([_write(tmp_path, [json.dumps(bad)])])


def test_wrong_schema(tmp_path):
    with pytest.raises(RecordError, match=r"r\.jsonl:1: \"schema\" must be 'xstage.record/1'"):
        load_records([_write(tmp_path, [_rec(schema="xstage.record/0")])])


def test_mixed_platforms_name_both_records(tmp_path):
    other = {"gpu": "G", "gpu_count": 2, "sms": 148, "driver": "1"}
    a = _write(tmp_path, [_rec()], "a.jsonl")
    b = _write(tmp_path, [_rec(), _rec(platform=other)], "b.jsonl")
    with pytest.raises(RecordError, match=r"b\.jsonl:2: mixed platforms: sms 148 vs 132 \(first record at a\.jsonl:1\)"):
        load_records([a, b])


def test_failed_checks_are_skipped_and_counted(tmp_path):
    failed = _rec(check={"ok": False, "max_abs_err": 3.0}, stats={})
    rs = load_records([_write(tmp_path, [_rec(), failed, ""])])
    assert len(rs.records) == 1 and rs.skipped_failed_check == 1


def test_unreadable_and_empty_inputs(tmp_path):
    with pytest.raises(RecordError, match="cannot read records"):
        load_records([tmp_path / "absent.jsonl"])
    with pytest.raises(RecordError, match="no valid records"):
        parse_texts([("e.jsonl", b"\n")])
