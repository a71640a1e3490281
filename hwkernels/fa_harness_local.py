"""Stand-ins for hwkernels.harness / hwkernels.destination.host_buffer (same signatures), used by
fa_bench only while those are not in this checkout. Delete once main has them."""

from dataclasses import dataclass, field

import numpy as np

from .stats import summarize


@dataclass
class Measurement:
    ok: bool
    max_abs_err: float
    stats: dict | None
    samples: dict = field(default_factory=dict)

    def check_dict(self) -> dict:
        return {"ok": self.ok, "max_abs_err": self.max_abs_err}

    def stats_dicts(self):
        return None if self.stats is None else {k: s.to_dict() for k, s in self.stats.items()}


def measure(run, repeats: int, warmup: int = 1, poison=None, check=None, flush_l2=False):
    kept, worst = [], 0.0
    for i in range(warmup + repeats):
        if poison is not None:
            poison()
        if flush_l2:
            _flush_l2()
        result = run()
        ok, err = check(result) if check else (True, 0.0)
        worst = max(worst, float(err))
        if not ok:
            return Measurement(False, worst, None)
        if i >= warmup:
            kept.append(result)
    samples = {k: np.concatenate([np.atleast_1d(np.asarray(r[k], dtype=np.float64)).ravel()
                                  for r in kept]) for k in kept[0]}
    return Measurement(True, worst, {k: summarize(v) for k, v in samples.items()}, samples)


_L2 = {}


def _flush_l2():
    import torch

    buf = _L2.get("buf")
    if buf is None:
        buf = _L2["buf"] = torch.empty(120 * 2**20, dtype=torch.uint8, device="cuda")
    buf.fill_(0x5A)


def capture_graph(fn):
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def graph_replay_us(fn, replays: int, graph=None) -> float:
    import torch

    graph = graph or capture_graph(fn)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / replays


@dataclass
class HostBuffer:
    cuda: object
    cpu: object
    ptr: int
    nbytes: int
    _keep: object = None


def host_buffer(nbytes: int, device) -> HostBuffer:
    """Mapped pinned host memory as a CUDA tensor (checked both ways before it is returned).

    cupy has no cudaHostGetDevicePointer: the device address comes from
    cudaPointerGetAttributes (under UVA it is the host address itself)."""
    import ctypes

    import cupy
    import numpy as np
    import torch

    rt = cupy.cuda.runtime
    host_ptr = rt.hostAlloc(nbytes, rt.hostAllocMapped | rt.hostAllocPortable)
    try:
        dev_ptr = int(rt.pointerGetAttributes(host_ptr).devicePointer) or host_ptr
    except Exception:  # noqa: BLE001 - UVA: the host address is the device address
        dev_ptr = host_ptr
    mem = cupy.cuda.UnownedMemory(dev_ptr, nbytes, owner=None, device_id=0)
    arr = cupy.ndarray((nbytes,), dtype=cupy.uint8, memptr=cupy.cuda.MemoryPointer(mem, 0))
    cuda = torch.from_dlpack(arr)
    cpu = torch.from_numpy(np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(host_ptr)))
    if cuda.device.type != "cuda" or cuda.data_ptr() != dev_ptr:
        raise RuntimeError("host buffer did not wrap as a CUDA tensor at its device address")
    n = min(nbytes, 1 << 20)
    cuda[:n].fill_(0xA5)
    torch.cuda.synchronize()
    if not bool((cpu[:n] == 0xA5).all()):
        raise RuntimeError("GPU stores to the mapped host buffer did not reach host memory")
    cpu[:n] = 0x5A
    if not bool((cuda[:n] == 0x5A).all()):
        raise RuntimeError("the GPU does not read the host's writes to the mapped buffer")
    return HostBuffer(cuda=cuda, cpu=cpu, ptr=int(dev_ptr), nbytes=nbytes, _keep=arr)
