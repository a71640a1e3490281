"""Bounded reads, strict JSON/TOML, atomic replacement and refusing to write over an input."""

import errno
import os

import pytest

from xsim import fileio
from xsim.cli import main
from xsim.fileio import OutputError, atomic_path, atomic_write, parse_json, parse_toml, read_bytes


def test_read_refuses_special_files_large_files_and_folders(tmp_path):
    with pytest.raises(ValueError, match="not a regular file"):
        read_bytes("/dev/zero", "records")
    os.mkfifo(tmp_path / "fifo")  # opening a FIFO for reading would block: refused before that
    with pytest.raises(ValueError, match="not a regular file"):
        read_bytes(tmp_path / "fifo", "records")
    with pytest.raises(ValueError, match="it is a folder"):
        read_bytes(tmp_path, "records")
    (tmp_path / "big").write_bytes(b"x" * 2048)
    with pytest.raises(ValueError, match="more than the limit of 1024"):
        read_bytes(tmp_path / "big", "records", limit=1024)
    assert read_bytes(tmp_path / "big", "records", limit=2048) == b"x" * 2048


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '{"a": 1e999}'])
def test_json_refuses_non_finite_numbers(text):
    with pytest.raises(ValueError, match="not finite"):
        parse_json(text)


@pytest.mark.parametrize("text", ["a = nan", "a = inf", "a = -inf", "a = 1e999"])
def test_toml_refuses_non_finite_numbers(text):
    with pytest.raises(ValueError, match="not finite"):
        parse_toml(text)


def test_a_write_that_fails_half_way_leaves_the_old_file(tmp_path):
    target = tmp_path / "profile.json"
    target.write_text("old contents\n")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half of the new")
            raise RuntimeError("the writer died")
    assert target.read_text() == "old contents\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.json"]  # no temporary file left


def test_a_full_disk_is_one_line_and_the_old_file_stays(tmp_path, monkeypatch):
    target = tmp_path / "report.html"
    target.write_bytes(b"old")
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputError, match="no space left on device"):
        atomic_write(target, b"new and longer")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_a_failed_rename_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "p.json"
    target.write_bytes(b"old")

    def denied(a, b):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "replace", denied)
    with pytest.raises(OutputError, match="permission denied"):
        atomic_write(target, "new")
    assert target.read_bytes() == b"old" and len(list(tmp_path.iterdir())) == 1


def test_atomic_write_replaces_and_keeps_the_mode(tmp_path):
    target = tmp_path / "a.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    atomic_write(target, "new")
    assert target.read_text() == "new" and (os.stat(target).st_mode & 0o777) == 0o640


def test_missing_folders_are_made_and_a_file_in_the_way_is_one_line(tmp_path):
    atomic_write(tmp_path / "out" / "deep" / "r.html", "x")
    assert (tmp_path / "out" / "deep" / "r.html").read_text() == "x"
    (tmp_path / "blocker").write_text("a file")
    with pytest.raises(OutputError, match="blocker is a file, not a folder"):
        atomic_write(tmp_path / "blocker" / "r.html", "x")
    with pytest.raises(OutputError, match="it is a folder"):
        atomic_write(tmp_path / "out", "x")


def test_an_input_is_never_written_over_even_through_a_link(tmp_path):
    fileio.forget_inputs()
    source = tmp_path / "records.jsonl"
    source.write_bytes(b"measurements\n")
    read_bytes(source, "records")
    os.symlink(source, tmp_path / "link.jsonl")
    os.link(source, tmp_path / "hard.jsonl")
    for name in ("records.jsonl", "link.jsonl", "hard.jsonl"):
        with pytest.raises(OutputError, match="it is the input"):
            atomic_write(tmp_path / name, b"a profile")
    assert source.read_bytes() == b"measurements\n"
    fileio.forget_inputs()


def test_calibrate_refuses_to_write_the_profile_over_its_records(tmp_path, capsys):
    from pathlib import Path

    shipped = Path(__file__).resolve().parents[1] / "calibration" / "records" / "h200-nvlink-x2-micro.jsonl"
    records = tmp_path / "R.jsonl"
    records.write_bytes(b"".join(shipped.read_bytes().splitlines(keepends=True)[:40]))
    before = records.read_bytes()
    assert main(["calibrate", str(records), "-o", str(records), "--fair"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "refusing to write profile" in err[0] and "it is the input" in err[0]
    assert records.read_bytes() == before


def test_report_makes_the_output_folder(tmp_path, capsys, monkeypatch):
    import xsim.report.html as html

    monkeypatch.setattr(html, "write_pngs", lambda figures, folder, stem: ([], "PNG skipped: test"))
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--no-des", "--experiment", "micro", "-o", "out/report.html"]) == 0
    assert (tmp_path / "out" / "report.html").read_text().startswith("<!doctype html>")
