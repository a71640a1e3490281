"""The sweep's row store: identity checks on resume, crash repair, and interrupts at random instants."""

import csv
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xsim.cli import main
from xsim.platform import resolve_platform
from xsim.rowstore import MANIFEST, ROWS_CSV, ROWS_JSONL, RowStore, identity
from xsim.scenario import load_scenario
from xsim.sweep import parse_axis, plan, point_id

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--set", "producers=2", "--set", "bursts=6", "--set", "warmup_bursts=1", "--engine", "simpy", "--no-plots"]


def _sweep(tmp_path, *args):
    return main(["sweep", "periodic", "--grid", "gap_us=0:3:1", *SMALL, "--jobs", "1", "--out", str(tmp_path), *args])


def _jsonl(folder):
    return [json.loads(x) for x in (folder / ROWS_JSONL).read_text().splitlines()]


def _csv(folder):
    with open(folder / ROWS_CSV, newline="") as fh:
        return list(csv.DictReader(fh))


def _agree(folder):
    """CSV and JSONL hold the same rows in the same order; returns the point ids."""
    rows, table = _jsonl(folder), _csv(folder)
    assert [r["point"] for r in rows] == [r["point"] for r in table]
    for r, t in zip(rows, table):
        assert float(t["issue_us_mean"]) == pytest.approx(r["issue_us_mean"], rel=1e-15)
    return [r["point"] for r in rows]


@pytest.mark.parametrize("change, where", [
    (["--set", "burst_bytes=16KB"], "fixed burst_bytes"),
    (["--platform", "paper-8gpu"], "platform"),
    (["--drain-gbps", "100"], "platform_sha256"),
])
def test_a_resume_of_another_configuration_is_refused(tmp_path, capsys, change, where):
    assert _sweep(tmp_path) == 0
    before = {n: (tmp_path / n).read_bytes() for n in (MANIFEST, ROWS_JSONL, ROWS_CSV)}
    capsys.readouterr()
    assert _sweep(tmp_path, "--resume", *change) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another configuration" in err[0] and where in err[0], err
    assert {n: (tmp_path / n).read_bytes() for n in before} == before


def test_a_resume_with_another_engine_or_code_is_refused(tmp_path):
    scenario = load_scenario("periodic").with_overrides(["producers=2", "bursts=6", "warmup_bursts=1"])
    platform = resolve_platform(None)
    ident = identity(scenario, platform, ["gap_us"], "simpy")
    store = RowStore(tmp_path, ident, resume=False)
    store.append({"point": '{"gap_us": 1.0}', "issue_us_mean": 1.5})
    store.close()
    with pytest.raises(ValueError, match="engine"):
        RowStore(tmp_path, {**ident, "engine": "fast"}, resume=True)
    with pytest.raises(ValueError, match="code sha256"):
        RowStore(tmp_path, {**ident, "code": {**ident["code"], "sha256": "0" * 64}}, resume=True)


def test_extending_the_grid_resumes_and_only_appends(tmp_path, capsys):
    assert _sweep(tmp_path) == 0
    first = (tmp_path / ROWS_JSONL).read_bytes()
    capsys.readouterr()
    assert main(["sweep", "periodic", "--grid", "gap_us=0:5:1", *SMALL, "--jobs", "1", "--out", str(tmp_path),
                 "--resume", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["skipped"] == 4 and doc["rows"] == 6
    assert (tmp_path / ROWS_JSONL).read_bytes().startswith(first)
    assert len(_agree(tmp_path)) == 6


def test_a_sweep_that_finishes_no_row_leaves_no_files(tmp_path, capsys):
    assert main(["sweep", "periodic", "--grid", "warmup_bursts=1,9", *SMALL, "--out", str(tmp_path / "s")]) == 2
    assert not (tmp_path / "s").exists()  # the bad point is said before anything is written


def test_opening_repairs_a_torn_line_and_a_short_csv(tmp_path):
    assert _sweep(tmp_path) == 0
    rows = (tmp_path / ROWS_JSONL).read_bytes()
    table = (tmp_path / ROWS_CSV).read_bytes().splitlines(keepends=True)
    (tmp_path / ROWS_JSONL).write_bytes(rows + b'{"point": "half a ro')       # cut by a crash
    (tmp_path / ROWS_CSV).write_bytes(b"".join(table[:-2]) + table[-2][:7])   # a row lost, one torn
    assert _sweep(tmp_path, "--resume") == 0
    assert (tmp_path / ROWS_JSONL).read_bytes() == rows
    assert len(_agree(tmp_path)) == 4


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _default_sigint():
    """In the sweep's process: SIGINT as a terminal delivers it. A test run started in the background
    by a non-interactive shell inherits SIGINT ignored, and a Python started so never sees Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_sweep_interrupted_at_random_instants_keeps_every_finished_row_once(tmp_path):
    from xsim.des.fast_engine import warm_up

    warm_up()  # compiled (or loaded) here once: the sweeps below load it from numba's cache
    seed = int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    out = tmp_path / "sweep"
    grid = "gap_us=0:59:1"
    argv = [sys.executable, "-m", "xsim", "sweep", "periodic", "--grid", grid, "--set", "producers=32",
            "--set", "bursts=800", "--set", "warmup_bursts=2", "--engine", "fast", "--jobs", "2", "--no-plots",
            "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kills = [("SIGINT to the group", signal.SIGINT, True), ("SIGTERM", signal.SIGTERM, False),
             ("SIGKILL", signal.SIGKILL, False), ("SIGINT to the group", signal.SIGINT, True)]
    rng.shuffle(kills)
    counts = []
    for round_, (name, sig, group) in enumerate(kills):
        had = _lines(out / ROWS_JSONL)
        proc = subprocess.Popen(argv + (["--resume"] if round_ else []), env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_default_sigint)
        deadline = time.monotonic() + 120
        while _lines(out / ROWS_JSONL) <= had and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0, 0.3))
        try:
            (os.killpg if group else os.kill)(proc.pid, sig)
        except ProcessLookupError:  # it finished first
            pass
        err = proc.communicate(timeout=60)[1].decode()
        assert "Traceback" not in err, (seed, name, err)
        gone = time.monotonic() + 10
        while _group_alive(proc.pid) and time.monotonic() < gone:
            time.sleep(0.05)
        assert not _group_alive(proc.pid), f"seed {seed}: a worker outlived the sweep after {name}"
        assert len(set(_agree(out))) == _lines(out / ROWS_JSONL), seed
        counts.append(_lines(out / ROWS_JSONL))
    done = subprocess.run(argv + ["--resume"], env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, (seed, done.stderr.decode()[-2000:])
    scenario = load_scenario("periodic")
    expected = sorted(point_id(p) for p in plan(scenario, [parse_axis(grid, scenario.module.PARAMS)]))
    assert sorted(_agree(out)) == expected, seed  # every point, each exactly once
    assert min(counts) < len(expected), (seed, counts)  # the interrupts did land mid-sweep
