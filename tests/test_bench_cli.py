"""``xsim bench``: a destination the machine cannot serve is one line and exit 2, before any GPU work."""

import pytest

from hwkernels import launch
from xsim.cli import main


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.fixture
def no_torchrun(monkeypatch):
    monkeypatch.setattr(launch.subprocess, "run", lambda *a, **k: pytest.fail("torchrun must not start"))


def test_peer_target_with_one_gpu(monkeypatch, capsys, tmp_path, no_torchrun):
    monkeypatch.setattr(launch, "gpu_count", lambda: 1)
    assert main(["bench", "micro", "--target", "peer", "--out", str(tmp_path / "r.jsonl")]) == 2
    assert "--target peer needs at least 2 GPUs, found 1: use --target host" in _one_line(capsys)
    assert main(["bench", "micro", "--target", "host", "--nproc", "2", "--out", str(tmp_path / "r.jsonl")]) == 2
    assert "must be in [1, 1]" in _one_line(capsys)


def test_host_target_without_a_gpu(monkeypatch, capsys, tmp_path, no_torchrun):
    monkeypatch.setattr(launch, "gpu_count", lambda: 0)
    assert main(["bench", "micro", "--target", "host", "--nproc", "1", "--out", str(tmp_path / "r.jsonl")]) == 2
    assert "no GPUs found" in _one_line(capsys)


def test_unknown_target(capsys, tmp_path, no_torchrun):
    assert main(["bench", "micro", "--target", "nvlink", "--out", str(tmp_path / "r.jsonl")]) == 2
    assert "invalid choice: 'nvlink'" in _one_line(capsys)
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("experiment", ["moe", "fa-a2a"])
def test_moe_and_fa_run_host_in_one_process(experiment, monkeypatch, capsys, tmp_path, no_torchrun):
    monkeypatch.setattr(launch, "gpu_count", lambda: 2)
    out = str(tmp_path / "r.jsonl")
    assert main(["bench", experiment, "--target", "host", "--nproc", "2", "--out", out]) == 2
    assert "use --nproc 1, or --target peer for N > 1" in _one_line(capsys)
