"""The Triton cross-check kernel writes the same pattern (Triton's CPU interpreter)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CODE = """
import torch
from hwkernels import pattern, triton_store
k, b, n = 3, 16384, 2
buf = torch.zeros(k * b * n, dtype=torch.uint8)
pattern.torch_poison(buf, buf.numel())
triton_store.launch(buf.view(torch.int32), k, b, n, num_warps=1)
print(pattern.torch_check(buf, k, b, n))
"""


def test_triton_kernel_matches_pattern_in_interpreter():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    env = dict(os.environ, TRITON_INTERPRET="1")
    out = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "(True, 0.0)"
