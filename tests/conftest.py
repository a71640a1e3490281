"""Shared test configuration: GPU tests skip cleanly on machines without NVIDIA GPUs."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def _gpus() -> int:
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(line.startswith("GPU ") for line in out.stdout.splitlines())


GPU_FILES = "tests/test_hwkernels_fa.py tests/test_hwkernels_gpu.py tests/test_hwkernels_loadgate.py"


def pytest_collection_modifyitems(config, items):
    if _gpus() > 0:
        if os.environ.get("TRITON_INTERPRET") != "1":
            return
        # an interpreter test module set it at import: every @triton.jit made after that runs on
        # the CPU interpreter, so a GPU test in this process would test the interpreter
        skip = pytest.mark.skip(reason="TRITON_INTERPRET=1 was set by an interpreter test module in this "
                                       f"process: run the GPU tests on their own (pytest -m gpu {GPU_FILES})")
    else:
        skip = pytest.mark.skip(reason="needs NVIDIA GPUs")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
