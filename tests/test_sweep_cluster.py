"""xsim sweep on dask.distributed: the same rows as local processes, resume, a killed worker, errors."""

import json
import os
import signal
import sys
import time

import pytest

from xsim.cli import main
from xsim.platform import resolve_platform
from xsim.scenario import load_scenario
from xsim.sweep import parse_axis, plan, point_id, run_sweep
from xsim.sweep_cluster import chunk_size, parse_scheduler

SMALL = ["producers=4", "bursts=40", "warmup_bursts=2"]
GRID = "gap_us=0:11:1"


def _setup():
    scenario = load_scenario("periodic").with_overrides(SMALL)
    return scenario, resolve_platform(None), plan(scenario, [parse_axis(GRID, scenario.module.PARAMS)])


def _rows(folder):
    """point -> row without its wall time (the only column that is not a result)."""
    rows = [json.loads(x) for x in (folder / "rows.jsonl").read_text().splitlines()]
    out = {r["point"]: {k: v for k, v in r.items() if k != "wall_s"} for r in rows}
    assert len(out) == len(rows)  # each point once
    return out


def _children(before=()):
    """Child processes still running but those in ``before`` (other tests' helpers, e.g. kaleido)
    and multiprocessing's resource tracker (it lives as long as this process)."""
    import psutil

    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.pid not in before and p.status() != psutil.STATUS_ZOMBIE \
                    and "resource_tracker" not in " ".join(p.cmdline()):
                out.append((p.pid, " ".join(p.cmdline())[:120]))
        except psutil.NoSuchProcess:
            pass
    return out


def test_parse_scheduler_and_chunks():
    assert parse_scheduler("local:2") == ("local", 2)
    assert parse_scheduler("tcp://10.0.0.5:8786") == ("address", "tcp://10.0.0.5:8786")
    for bad in ("local:0", "local:x", "", "tcp://a b"):
        with pytest.raises(ValueError):
            parse_scheduler(bad)
    assert chunk_size(2000, 2) == 32 and chunk_size(12, 2) == 1 and chunk_size(100, 2) == 7


def test_without_distributed_the_option_says_so(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed
    code = main(["sweep", "periodic", "--grid", "gap_us=1,2", "--scheduler", "local:2", "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "pip install 'xstage[cluster]'" in err[0]
    assert not (tmp_path / "s").exists()


def test_an_unreachable_scheduler_is_one_line_within_seconds(capsys, tmp_path):
    pytest.importorskip("distributed")
    start = time.monotonic()
    code = main(["sweep", "periodic", "--grid", "gap_us=1,2", "--scheduler", "tcp://127.0.0.1:9",
                 "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "cannot reach the dask scheduler" in err[0], err
    assert time.monotonic() - start < 15
    assert not (tmp_path / "s").exists()


def test_local_cluster_rows_equal_local_rows_bit_for_bit_and_resume(tmp_path):
    pytest.importorskip("distributed")
    scenario, platform, points = _setup()
    before = {pid for pid, _ in _children()}
    run_sweep(scenario, platform, points, tmp_path / "local", engine="fast", jobs=2)
    seen = []

    def stop_after_three(row):
        seen.append(row)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(scenario, platform, points, tmp_path / "dask", engine="fast", on_row=stop_after_three,
                  scheduler="local:2")
    assert not _children(before), f"the LocalCluster outlived the interrupted sweep: {_children(before)}"
    assert len(_rows(tmp_path / "dask")) == 3
    count = run_sweep(scenario, platform, points, tmp_path / "dask", engine="fast", resume=True, scheduler="local:2")
    assert count == len(points)
    assert _rows(tmp_path / "dask") == _rows(tmp_path / "local")  # every value identical, each point once
    assert sorted(_rows(tmp_path / "dask")) == sorted(point_id(p) for p in points)
    assert not _children(before)


def test_a_worker_killed_mid_sweep_loses_no_row(tmp_path):
    distributed = pytest.importorskip("distributed")
    scenario, platform, points = _setup()
    run_sweep(scenario, platform, points, tmp_path / "local", engine="fast", jobs=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=50) as cluster:
        pids = [nanny.process.pid for nanny in cluster.workers.values()]
        killed = []

        def kill_one(row):
            if not killed:
                os.kill(pids[0], signal.SIGKILL)  # its chunks go to the other worker (the nanny restarts it)
                killed.append(pids[0])

        count = run_sweep(scenario, platform, points, tmp_path / "dask", engine="fast", on_row=kill_one,
                          scheduler=cluster.scheduler_address)
    assert killed and count == len(points)
    assert _rows(tmp_path / "dask") == _rows(tmp_path / "local")


def test_ctrl_c_to_the_group_stops_a_local_cluster_sweep_cleanly(tmp_path):
    """Ctrl-C reaches every process of the group: the command says `interrupted`, its workers
    print nothing, nothing is left running, the finished rows stay and a resume completes them."""
    import subprocess

    import psutil

    pytest.importorskip("distributed")
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "s"
    argv = [sys.executable, "-m", "xsim", "sweep", "periodic", "--grid", "gap_us=0:99:1", "--set", "producers=32",
            "--set", "bursts=800", "--set", "warmup_bursts=2", "--no-plots", "--out", str(out),
            "--scheduler", "local:2"]
    env = {**os.environ, "PYTHONPATH": str(root)}
    # a terminal's foreground command starts with SIGINT at its default; a test run as a background job
    # (no job control) inherits it ignored, and the sweep would never see the Ctrl-C this test sends
    proc = subprocess.Popen(argv, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    rows = lambda: (out / "rows.jsonl").read_bytes().count(b"\n") if (out / "rows.jsonl").exists() else 0  # noqa: E731
    deadline = time.monotonic() + 120
    while rows() < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    err = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 130 and "Traceback" not in err and err.strip().endswith("xsim: interrupted"), err

    def running():
        out_ = []
        for p in psutil.process_iter(["pid", "status"]):
            try:
                if os.getpgid(p.pid) == proc.pid and p.info["status"] != psutil.STATUS_ZOMBIE:
                    out_.append(p.pid)
            except (ProcessLookupError, psutil.NoSuchProcess):
                pass
        return out_

    gone = time.monotonic() + 10
    while running() and time.monotonic() < gone:
        time.sleep(0.05)
    assert not running()
    kept = rows()
    assert 2 <= kept < 100
    assert subprocess.run(argv + ["--resume"], env=env, capture_output=True, timeout=300).returncode == 0
    assert sorted(json.loads(x)["point"] for x in (out / "rows.jsonl").read_text().splitlines()) == \
        sorted(json.dumps({"gap_us": float(g)}) for g in range(100))
