"""torch.distributed and PyTorch symmetric memory for the GPU experiments.

Multicast is never used: the variables of ``launch.SAFE_ENV`` (NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1) are forced before NCCL or
symmetric memory initialise. ``init`` joins the torchrun job (any N >= 1: the host-link
experiments run with one process); ``symmetric_buffer`` is only made for ``peer`` destinations.
"""

import os
from dataclasses import dataclass

from .launch import SAFE_ENV


def force_safe_env() -> None:
    os.environ.update(SAFE_ENV)


@dataclass
class Dist:
    """This process's place in the job."""

    rank: int
    world: int
    device: object          # torch.device


@dataclass
class SymmetricBuffer:
    """This rank's symmetric buffer (peers write here) and its mapped view of every peer's."""

    buffer: object          # uint8 tensor
    handle: object          # _SymmetricMemory handle of `buffer`
    nbytes: int

    def peer_ptr(self, peer: int) -> int:
        """Device address of `peer`'s symmetric buffer, mapped into this process."""
        return int(self.handle.buffer_ptrs[peer])

    def peer_view(self, peer: int):
        """`peer`'s symmetric buffer as a uint8 tensor on this device (stores go over NVLink)."""
        import torch

        return self.handle.get_buffer(peer, (self.nbytes,), torch.uint8)


def init() -> Dist:
    """Join the torchrun job (NCCL) and pick this rank's GPU."""
    force_safe_env()
    import torch
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=device)
    return Dist(dist.get_rank(), dist.get_world_size(), device)


def symmetric_buffer(nbytes: int, d: Dist) -> SymmetricBuffer:
    """Allocate and rendezvous `nbytes` of symmetric memory across the job."""
    force_safe_env()
    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    buf = symm_mem.empty(nbytes, dtype=torch.uint8, device=d.device)
    handle = symm_mem.rendezvous(buf, dist.group.WORLD)
    return SymmetricBuffer(buf, handle, nbytes)


def all_ok(flag: bool, err: float = 0.0, device="cuda") -> tuple[bool, float]:
    """Every rank's flag AND-ed and error MAX-ed (a synchronising collective; ``device``: where
    the collective's tensor lives, "cuda" for NCCL, "cpu" for gloo in the CPU tests)."""
    import torch
    import torch.distributed as dist

    t = torch.tensor([0.0 if flag else 1.0, float(err)], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    bad, worst = t.tolist()
    return bad == 0.0, worst


def barrier(device="cuda") -> None:
    """All ranks here, all their queued GPU work done (``device`` as in all_ok)."""
    import torch

    gpu = torch.device(device).type == "cuda"
    if gpu:
        torch.cuda.synchronize()
    all_ok(True, device=device)
    if gpu:
        torch.cuda.synchronize()
