"""What the records say about the machine: GPU, count, SMs, clock, link, driver, versions."""

import subprocess


def _smi(*args: str) -> str:
    try:
        out = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout if out.returncode == 0 else ""


def driver_version() -> str:
    lines = _smi("--query-gpu=driver_version", "--format=csv,noheader").split()
    return lines[0] if lines else "unknown"


def link_between(topo_text: str, a: int, b: int) -> str:
    """The `nvidia-smi topo -m` entry between GPU a and GPU b (e.g. 'NV18'), or 'unknown'."""
    rows = [line.split() for line in topo_text.splitlines() if line.startswith("GPU")]
    for row in rows:
        if row[0] == f"GPU{a}" and len(row) > b + 1:
            return row[b + 1]
    return "unknown"


def platform(world: int, sm_clock_mhz: float, device_index: int = 0, peer_index: int = 1) -> dict:
    import torch

    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = "none"
    props = torch.cuda.get_device_properties(device_index)
    return {
        "gpu": props.name,
        "gpu_count": world,
        "sms": props.multi_processor_count,
        "sm_clock_mhz": round(sm_clock_mhz),
        "link": link_between(_smi("topo", "-m"), device_index, peer_index),
        "driver": driver_version(),
        "cuda": torch.version.cuda or "unknown",
        "torch": torch.__version__.split("+")[0],
        "triton": triton_version,
    }
