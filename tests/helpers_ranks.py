"""N real ranks on the CPU for the N-rank runners' tests: gloo, spawned processes, and a
test-only peer destination whose ``remote(owner)`` is the owner's shared-memory CPU tensor
(made in the parent with ``share_memory_()``), so a kernel's stores land in another process's
buffer and the receiver's check reads what really arrived there.

    buffers = shared_buffers(world, nbytes)
    spawn(child_fn, world, buffers, *args)   # child_fn(rank, world, port, buffers, *args)
    # in a child: with cpu_rank(rank, world, port, buffers) as d: ...
"""

import json
import os
import socket
import time
from contextlib import contextmanager
from types import SimpleNamespace

import torch


class SharedDest:
    """destination.Destination's interface over the parent's shared-memory tensors."""

    kind, link = "peer", "shared memory (test)"

    def __init__(self, buffers, rank, detour=None):
        self.buffers, self.rank, self.detour = buffers, rank, detour

    def remote(self, owner: int):
        if self.detour is not None and owner != self.rank:   # sabotage: never reaches owner
            return self.detour
        return self.buffers[owner]

    def receive_view(self):
        return self.buffers[self.rank]


class WallEvent:
    """torch.cuda.Event's timing interface by the wall clock (no GPU)."""

    def __init__(self, **_):
        self.t = 0.0

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shared_buffers(world: int, nbytes: int) -> list:
    return [torch.zeros(nbytes, dtype=torch.uint8).share_memory_() for _ in range(world)]


def spawn(fn, world: int, *args, timeout_s: float = 240.0) -> None:
    """fn(rank, world, port, *args) in ``world`` spawned processes; a child's exception is
    raised here; after ``timeout_s`` (a deadlock) the children are killed and TimeoutError."""
    import torch.multiprocessing as mp

    ctx = mp.start_processes(fn, args=(world, free_port(), *args), nprocs=world, join=False,
                             start_method="spawn")
    deadline = time.time() + timeout_s
    while not ctx.join(timeout=1.0):
        if time.time() > deadline:
            for p in ctx.processes:
                p.kill()
            raise TimeoutError(f"{world} ranks still running after {timeout_s:.0f} s")


def join_gloo(rank: int, world: int, port: int):
    """Initialise gloo in a child; returns the symm.Dist of this rank (device cpu)."""
    import torch.distributed as dist

    from hwkernels.symm import Dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    return Dist(rank, world, torch.device("cpu"))


def leave_gloo(done: bool) -> None:
    """End a child's process group (done: after a last barrier, every rank at its end); left
    alive, gloo's threads can abort the process at exit."""
    import torch.distributed as dist

    if done:
        dist.barrier()
    dist.destroy_process_group()


@contextmanager
def cpu_rank(rank: int, world: int, port: int, buffers, sabotage: bool = False):
    """A child's gloo rank for a runner: the machine reads patched (patch_cpu_runner), peers
    through SharedDest over ``buffers`` (sabotage: remote stores detoured); yields the Dist;
    the process group ends on the way out (after a barrier when the body finished)."""
    d = join_gloo(rank, world, port)
    detour = torch.zeros_like(buffers[0]) if sabotage else None
    patch_cpu_runner(d, SharedDest(buffers, rank, detour))
    done = False
    try:
        yield d
        done = True
    finally:
        leave_gloo(done)


def read_records(path) -> list[dict]:
    return [json.loads(line) for line in open(path).read().splitlines()]


def patch_cpu_runner(d, dest) -> None:
    """What the GPU runners read from the machine, replaced in a child (a throwaway process)."""
    from hwkernels import destination, platform_info, symm

    os.environ["WORLD_SIZE"] = str(d.world)
    symm.init = lambda: d
    destination.make = lambda kind, nbytes, _d: dest
    torch.cuda.Event = WallEvent
    torch.cuda._sleep = lambda n: None
    torch.cuda.get_device_properties = lambda _dev: SimpleNamespace(multi_processor_count=1)
    platform_info.platform = lambda world, *a, destination="peer", **k: {
        "gpu": "cpu", "gpu_count": world, "sms": 1, "destination": destination}
