"""Run a snippet of kernel code under Triton's interpreter in a fresh process (CPU tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_interpreted(code: str, timeout_s: float = 600) -> list[str]:
    """stdout lines of ``python -c code`` with TRITON_INTERPRET=1 and the repo on the path
    (a fresh process: the interpreter must be set before triton is imported); skips
    without torch or triton, fails on a non-zero exit with the stderr's tail."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=timeout_s)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.splitlines()
