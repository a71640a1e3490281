"""Shared test configuration: GPU tests skip cleanly on machines without NVIDIA GPUs."""

from __future__ import annotations

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


def pytest_collection_modifyitems(config, items):
    if _gpus() > 0:
        return
    skip = pytest.mark.skip(reason="needs NVIDIA GPUs")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
