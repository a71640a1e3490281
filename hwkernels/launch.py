"""Start GPU experiments under torchrun (standard library only: imports without torch).

    bench("micro", nproc=2, out=Path("records.jsonl"), extra_args=["--suite", "quick"], target="peer")

runs `python -m torch.distributed.run --nproc-per-node 2 -m hwkernels.micro --target peer --out ...`
with multicast disabled (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1) and the
git commit of this checkout in XSTAGE_COMMIT / XSTAGE_DIRTY for the records. The destination
(`peer`: another GPU, N >= 2; `host`: pinned host memory over PCIe, any N >= 1) is checked here,
before torchrun starts, so a wrong one is one line and no GPU time.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .destination import DestinationError, check_kind

SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
            "NVSHMEM_DISABLE_NVLS": "1"}
EXPERIMENTS = {"micro": "hwkernels.micro", "fa-a2a": "hwkernels.fa_bench", "moe": "hwkernels.moe_bench"}
ONE_PROCESS_HOST = ("fa-a2a", "moe")   # --target host runs these in one process (N > 1: peer)
NO_GPU_MESSAGE = "no GPUs found: xsim bench needs NVIDIA GPUs"


class NoGPUError(RuntimeError):
    """Raised when no NVIDIA GPU is visible."""


def gpu_count() -> int:
    """NVIDIA GPUs visible to `nvidia-smi -L` (0 when nvidia-smi is missing or fails)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return 0
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    if out.returncode != 0:
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def git_state(repo: Path) -> tuple[str, str]:
    """(commit, dirty) of the checkout holding hwkernels, as strings; ('unknown', '') if none.

    dirty is '1' when hwkernels/ differs from that commit, '0' when it does not.
    """
    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                              text=True, timeout=30)
    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return "unknown", ""
        status = git("status", "--porcelain", "--", "hwkernels")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown", ""
    return head.stdout.strip(), ("1" if status.stdout.strip() else "0")


def run_torchrun(module: str, nproc: int, args: list[str], env: dict | None = None) -> int:
    """Run `python -m torch.distributed.run --nproc-per-node nproc -m module *args`.

    Raises NoGPUError when no GPU is visible and ValueError when nproc is not in
    [1, GPUs]. Returns torchrun's exit code.
    """
    found = gpu_count()
    if found == 0:
        raise NoGPUError(NO_GPU_MESSAGE)
    if not 1 <= nproc <= found:
        raise ValueError(f'"nproc" must be in [1, {found}] (GPUs found), got {nproc}.')
    child_env = dict(os.environ)
    child_env.update(env or {})
    child_env.update(SAFE_ENV)
    root = str(Path(__file__).resolve().parent.parent)
    child_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (root, child_env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
           "-m", module, *args]
    return subprocess.run(cmd, env=child_env).returncode


def bench(experiment: str, nproc: int | None, out: Path, extra_args: list[str], target: str = "peer") -> int:
    """Run one experiment's suite on `nproc` GPUs (None: all for peer, 1 for host), appending
    records to `out`. Raises NoGPUError without GPUs and ValueError (DestinationError) for an
    unknown target or one the GPU count cannot serve."""
    if experiment not in EXPERIMENTS:
        raise ValueError(f'"experiment" must be one of {sorted(EXPERIMENTS)}, got {experiment!r}.')
    found = gpu_count()
    if found == 0:
        raise NoGPUError(NO_GPU_MESSAGE)
    if target == "peer" and found < 2:
        raise DestinationError(f"--target peer needs at least 2 GPUs, found {found}: use --target host on one GPU")
    if nproc is None:
        nproc = found if target == "peer" else 1
    check_kind(target, nproc)   # an unknown target; peer with --nproc 1
    if target == "host" and nproc > 1 and experiment in ONE_PROCESS_HOST:
        raise DestinationError(f"--target host runs {experiment} in one process: use --nproc 1, "
                               "or --target peer for N > 1")
    if not 1 <= nproc <= found:
        raise ValueError(f'"nproc" must be in [1, {found}] (GPUs found), got {nproc}.')
    env = {}
    if "XSTAGE_COMMIT" not in os.environ:
        commit, dirty = git_state(Path(__file__).resolve().parent.parent)
        env["XSTAGE_COMMIT"] = commit
        if dirty:
            env["XSTAGE_DIRTY"] = dirty
    return run_torchrun(EXPERIMENTS[experiment], nproc, ["--out", str(out), "--target", target, *extra_args], env)
