"""Run a snippet of kernel code in a fresh process (CPU tests): under Triton's interpreter, or
compiled for real with the interpreter off (an interpreter test module may have set it in this one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_fresh(code: str, interpret: bool = True, timeout_s: float = 600) -> list[str]:
    """stdout lines of ``python -c code`` in a fresh process with the repo on the path and
    TRITON_INTERPRET=1 (interpret) or unset (the interpreter is read when a kernel is
    decorated, so only a fresh process is sure of either); skips without torch or triton,
    fails on a non-zero exit with the stderr's tail."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHONPATH=str(ROOT), **({"TRITON_INTERPRET": "1"} if interpret else {}))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=timeout_s)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.splitlines()


def run_interpreted(code: str, timeout_s: float = 600) -> list[str]:
    """run_fresh under Triton's interpreter."""
    return run_fresh(code, interpret=True, timeout_s=timeout_s)
