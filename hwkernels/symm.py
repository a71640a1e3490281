"""torch.distributed + PyTorch symmetric memory setup for the microbenchmarks.

Multicast is never used: NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 (and
NVSHMEM_DISABLE_NVLS=1) are forced before NCCL or symmetric memory initialise.
"""

import os
from dataclasses import dataclass

SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
            "NVSHMEM_DISABLE_NVLS": "1"}


def force_safe_env() -> None:
    os.environ.update(SAFE_ENV)


@dataclass
class Dist:
    """This process's place in the job and its buffers."""

    rank: int
    world: int
    device: object          # torch.device
    symm: object            # uint8 tensor: this rank's symmetric buffer (peers write here)
    handle: object          # _SymmetricMemory handle of `symm`
    nbytes: int

    def peer_ptr(self, peer: int) -> int:
        """Device address of `peer`'s symmetric buffer, mapped into this process."""
        return int(self.handle.buffer_ptrs[peer])

    def peer_view(self, peer: int):
        """`peer`'s symmetric buffer as a uint8 tensor on this device (stores go over NVLink)."""
        import torch

        return self.handle.get_buffer(peer, (self.nbytes,), torch.uint8)


def init(nbytes: int) -> Dist:
    """Join the torchrun job (NCCL), pick the GPU, allocate and rendezvous `nbytes`."""
    force_safe_env()
    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=device)
    buf = symm_mem.empty(nbytes, dtype=torch.uint8, device=device)
    handle = symm_mem.rendezvous(buf, dist.group.WORLD)
    return Dist(dist.get_rank(), dist.get_world_size(), device, buf, handle, nbytes)


def all_ok(flag: bool, err: float = 0.0) -> tuple[bool, float]:
    """Every rank's flag AND-ed and error MAX-ed (a synchronising collective)."""
    import torch
    import torch.distributed as dist

    t = torch.tensor([0.0 if flag else 1.0, float(err)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    bad, worst = t.tolist()
    return bad == 0.0, worst


def barrier() -> None:
    """All ranks here, all their queued GPU work done."""
    import torch

    torch.cuda.synchronize()
    all_ok(True)
    torch.cuda.synchronize()
