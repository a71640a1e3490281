"""Reading records: every bad input is a RecordError naming the file and line."""

import gzip
import json

import pytest

from calibration.records import RecordError, load_records, parse_texts, record_stem, shipped_repeat_files
from xsim.fileio import gunzipped

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


def test_a_gzipped_file_reads_as_its_text_with_the_same_hash(tmp_path):
    plain = _write(tmp_path, [_rec(), _rec()])
    packed = tmp_path / "r.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    a, b = load_records([plain]), load_records([packed])
    assert [r.data for r in a.records] == [r.data for r in b.records] and a.sha256 == b.sha256
    assert b.records[1].where == "r.jsonl.gz:2" and b.files[0] == ("r.jsonl.gz", a.files[0][1])
    assert record_stem("x/h-moe-1.jsonl.gz".rsplit("/", 1)[1]) == record_stem("h-moe-1.jsonl") == "h-moe-1"


@pytest.mark.parametrize("damage, message", [
    (lambda z: z[:-5], "truncated gzip"),
    (lambda z: z[:12] + bytes(b ^ 0xFF for b in z[12:20]) + z[20:], "broken gzip"),
    (lambda z: z + z, "more than one gzip member"),
])
def test_a_damaged_gzip_file_is_one_line_naming_it(tmp_path, damage, message):
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(damage(gzip.compress((_rec() + "\n").encode(), mtime=0)))
    with pytest.raises(RecordError, match=message) as exc:
        load_records([path])
    assert "bad.jsonl.gz" in str(exc.value) and "\n" not in str(exc.value)


def test_a_gzip_bomb_stops_at_the_input_limit():
    bomb = gzip.compress(b"\n" * 4096, mtime=0)
    with pytest.raises(ValueError, match="more than the limit of 1024 bytes"):
        gunzipped(bomb, "bomb.jsonl.gz", limit=1024)
    assert gunzipped(b'{"a": 1}\n', "plain") == b'{"a": 1}\n'


def test_shipped_repeats_are_found_gzipped():
    files = shipped_repeat_files("h100-pcie-host", "moe-kernels-steady")
    assert files and all(f.name.endswith(".jsonl.gz") for f in files)
    assert parse_texts([(files[0].name, files[0].read_bytes())]).records
