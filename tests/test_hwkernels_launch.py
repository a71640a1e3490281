import subprocess
import sys
from pathlib import Path

import pytest

from hwkernels import launch

ROOT = Path(__file__).resolve().parent.parent


def test_launch_imports_without_torch_or_cupy():
    code = ("import sys; sys.modules.update(torch=None, cupy=None, triton=None); "
            "import hwkernels.launch as l; print(l.EXPERIMENTS['micro'])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hwkernels.micro"


def test_no_nvidia_smi_means_no_gpus(monkeypatch):
    monkeypatch.setattr(launch.shutil, "which", lambda name: None)
    assert launch.gpu_count() == 0
    with pytest.raises(launch.NoGPUError, match="^no GPUs found: xsim bench needs NVIDIA GPUs$"):
        launch.bench("micro", 2, Path("out.jsonl"), [])
    with pytest.raises(launch.NoGPUError):
        launch.run_torchrun("hwkernels.micro", 1, [])


def test_gpu_count_parses_nvidia_smi(monkeypatch):
    listing = "GPU 0: NVIDIA H200 (UUID: GPU-a)\nGPU 1: NVIDIA H200 (UUID: GPU-b)\n"
    monkeypatch.setattr(launch.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(launch.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 0, stdout=listing, stderr=""))
    assert launch.gpu_count() == 2


def test_bench_runs_torchrun_with_safe_env(monkeypatch, tmp_path):
    seen = {}

    def fake_run(cmd, env=None, **kw):
        seen["cmd"], seen["env"] = cmd, env
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(launch, "gpu_count", lambda: 2)
    monkeypatch.setattr(launch.subprocess, "run", fake_run)
    monkeypatch.setenv("XSTAGE_COMMIT", "deadbeef")
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    rc = launch.bench("micro", 2, tmp_path / "r.jsonl", ["--suite", "quick"])
    assert rc == 0
    assert seen["cmd"][1:] == ["-m", "torch.distributed.run", "--nproc-per-node", "2", "-m",
                               "hwkernels.micro", "--out", str(tmp_path / "r.jsonl"),
                               "--target", "peer", "--suite", "quick"]
    env = seen["env"]
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert env["XSTAGE_COMMIT"] == "deadbeef"
    assert str(ROOT) in env["PYTHONPATH"].split(":")


def test_bad_arguments(monkeypatch):
    monkeypatch.setattr(launch, "gpu_count", lambda: 2)
    with pytest.raises(ValueError, match="experiment"):
        launch.bench("nope", 2, Path("x"), [])
    with pytest.raises(ValueError, match="nproc"):
        launch.run_torchrun("hwkernels.micro", 3, [])


def test_micro_cli_help_without_gpu():
    out = subprocess.run([sys.executable, "-m", "hwkernels.micro", "--help"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0 and "--suite" in out.stdout


def test_destination_errors_before_any_gpu_time(monkeypatch):
    """--target peer with one GPU, --target host without a GPU, an unknown target: one clear error."""
    from hwkernels.destination import DestinationError

    monkeypatch.setattr(launch.subprocess, "run", lambda *a, **k: pytest.fail("torchrun must not start"))
    monkeypatch.setattr(launch, "gpu_count", lambda: 1)
    with pytest.raises(DestinationError, match="--target peer needs at least 2 GPUs, found 1"):
        launch.bench("micro", None, Path("x"), [], target="peer")
    with pytest.raises(DestinationError, match='"target" must be one of peer, host'):
        launch.bench("micro", 1, Path("x"), [], target="nvlink")
    monkeypatch.setattr(launch, "gpu_count", lambda: 0)
    with pytest.raises(launch.NoGPUError):
        launch.bench("micro", 1, Path("x"), [], target="host")


def test_host_target_defaults_to_one_process(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(launch, "gpu_count", lambda: 8)

    def fake_run(cmd, env=None, **kw):
        seen["cmd"] = cmd
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(launch.subprocess, "run", fake_run)
    monkeypatch.setattr(launch, "git_state", lambda repo: ("abc", "0"))
    launch.bench("micro", None, tmp_path / "r.jsonl", [], target="host")
    assert seen["cmd"][4] == "1" and seen["cmd"][-2:] == ["--target", "host"]
