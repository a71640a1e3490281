"""What the records say about the machine: GPU, count, SMs, clock, destination and link, driver, versions."""

import subprocess


def _smi(*args: str) -> str:
    try:
        out = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout if out.returncode == 0 else ""


def smi_sm_clock_mhz(index: int = 0) -> float:
    """The SM clock nvidia-smi reports now for GPU ``index`` (0 if it cannot be read)."""
    text = _smi(f"--id={index}", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits").strip()
    return float(text) if text.replace(".", "", 1).isdigit() else 0.0


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


def pcie_link(device_index: int) -> str:
    """The GPU's host link as 'PCIe Gen5 x16' (the maximum the GPU and system support), or 'unknown'."""
    fields = _smi(f"--id={device_index}", "--query-gpu=pcie.link.gen.max,pcie.link.width.max",
                  "--format=csv,noheader,nounits").strip().split(",")
    if len(fields) != 2 or not all(f.strip().isdigit() for f in fields):
        return "unknown"
    return f"PCIe Gen{fields[0].strip()} x{fields[1].strip()}"


def link_name(destination: str, device_index: int = 0, peer_index: int = 1) -> str:
    """The link a destination's stores cross: the peer link (e.g. 'NV18') or the host PCIe link."""
    if destination == "host":
        return pcie_link(device_index)
    return link_between(_smi("topo", "-m"), device_index, peer_index)


def platform(world: int, sm_clock_mhz: float, device_index: int = 0, peer_index: int = 1,
             destination: str = "peer") -> dict:
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
        "destination": destination,
        "link": link_name(destination, device_index, peer_index),
        "driver": driver_version(),
        "cuda": torch.version.cuda or "unknown",
        "torch": torch.__version__.split("+")[0],
        "triton": triton_version,
    }
