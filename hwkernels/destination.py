"""Where a kernel's remote stores land: another GPU (`peer`) or this GPU's host memory (`host`).

Every kernel that stores remotely takes a destination, so every experiment runs on one GPU over
the host link and on N GPUs over NVLink with the same code:

- ``peer``: PyTorch symmetric memory (N >= 2 GPUs). ``remote(owner)`` is ``owner``'s symmetric
  buffer mapped into this process; stores to it cross NVLink.
- ``host``: pinned host memory mapped into this GPU's address space (any N >= 1, one buffer per
  GPU). ``remote(owner)`` is this GPU's host buffer (the bytes bound for ``owner``); stores to it
  leave the GPU as PCIe posted writes.

Both give kernels a CUDA tensor, so CUDA C++ (a raw pointer) and Triton (a tensor argument) use
one path. Host memory comes from ``cudaHostAlloc(..., Mapped | Portable)`` and is wrapped as a
CUDA tensor through DLPack (a pinned CPU tensor handed to a Triton kernel has been seen to raise
nothing and write nothing). Checks read what arrived: the receiver's view (``check_view``) is
a device tensor for both kinds (for host memory, the GPU reads it back over PCIe).

Fresh addresses: rewriting the same destination lines lets the source GPU's L2 merge stores
bound for host memory before they reach the link, which fakes a drain faster than the link.
Burst ``j`` writes ring slot ``ring_slot(j, n)``, with a ring of ``ring_bursts(...)`` slots spanning
well over twice the L2, so a slot is rewritten only after every line of it left the L2.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

KINDS = ("peer", "host")
RING_L2_MULTIPLE = 4          # the ring spans at least 4x the L2 (the issue asks "well over 2x")
H200_L2_BYTES = 60 * 2**20    # used when the device does not say (CPU tests)


class DestinationError(ValueError):
    """A destination that cannot be made here (one line for the CLI)."""


def check_kind(kind: str, world: int) -> None:
    """Raise DestinationError unless ``kind`` can run with ``world`` GPUs."""
    if kind not in KINDS:
        raise DestinationError(f'"target" must be one of {", ".join(KINDS)}, got {kind!r}')
    if world < 1:
        raise DestinationError('"nproc" must be >= 1')
    if kind == "peer" and world < 2:
        raise DestinationError("--target peer needs at least 2 GPUs (stores go to another GPU); "
                               "use --target host on one GPU")


def ring_bursts(burst_volume_bytes: int, bursts: int, l2_bytes: int = H200_L2_BYTES) -> int:
    """Ring slots (whole bursts of K*B bytes) covering >= RING_L2_MULTIPLE x L2, at most ``bursts``."""
    if burst_volume_bytes <= 0 or bursts < 1:
        raise ValueError('"burst_volume_bytes" and "bursts" must be > 0.')
    need = math.ceil(RING_L2_MULTIPLE * l2_bytes / burst_volume_bytes)
    return max(1, min(bursts, need))


def ring_slot(burst: int, n_slots: int) -> int:
    """The ring slot burst ``burst`` writes (bursts cycle through the slots in order)."""
    if n_slots < 1 or burst < 0:
        raise ValueError('"n_slots" must be >= 1 and "burst" >= 0.')
    return burst % n_slots


def last_burst_in_slot(slot: int, n_slots: int, bursts: int) -> int:
    """The burst whose data a slot holds after ``bursts`` bursts: the last one mapped to it."""
    if not 0 <= slot < min(n_slots, bursts):
        raise ValueError('"slot" must be in [0, min(n_slots, bursts)).')
    return slot + ((bursts - 1 - slot) // n_slots) * n_slots


@dataclass
class HostBuffer:
    """Mapped, pinned host memory with a CUDA-tensor and a CPU-tensor view of the same bytes."""

    cuda: object    # uint8 torch tensor on cuda:i (aliases the host bytes)
    cpu: object     # uint8 torch tensor on the CPU (the same bytes)
    ptr: int        # device address
    nbytes: int


def host_buffer(nbytes: int, device) -> HostBuffer:
    """``nbytes`` of mapped pinned host memory, visible to ``device`` (freed with the views).

    With unified addressing (every 64-bit CUDA platform) the device address of
    ``cudaHostAllocMapped`` memory equals its host address. A write through the CUDA view is read
    back through the CPU view before the buffer is handed out, so a mapping that silently writes
    nothing fails here, not in a measurement.
    """
    import ctypes

    import cupy
    import numpy as np
    import torch

    if nbytes <= 0:
        raise ValueError('"nbytes" must be > 0.')
    rt = cupy.cuda.runtime
    index = torch.device(device).index or 0
    with cupy.cuda.Device(index):
        ptr = rt.hostAlloc(nbytes, rt.hostAllocMapped | rt.hostAllocPortable)
        mem = cupy.cuda.UnownedMemory(ptr, nbytes, owner=None, device_id=index)
        arr = cupy.ndarray((nbytes,), dtype=cupy.uint8, memptr=cupy.cuda.MemoryPointer(mem, 0))
        cuda = torch.from_dlpack(arr)
    cpu = torch.from_numpy(np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr)))
    buf = HostBuffer(cuda=cuda, cpu=cpu, ptr=int(ptr), nbytes=nbytes)
    weakref.finalize(buf, rt.freeHost, ptr)
    probe = min(nbytes, 4096)
    cuda[:probe].fill_(0xA5)
    torch.cuda.synchronize(cuda.device)
    if cuda.device.type != "cuda" or not bool((cpu[:probe] == 0xA5).all()):
        raise RuntimeError("a store through the host buffer's CUDA view did not reach host memory")
    return buf


class Destination:
    """This GPU's remote-store target of one kind, with ``nbytes`` of receive space per owner."""

    def __init__(self, kind: str, nbytes: int, dist):
        check_kind(kind, dist.world)
        self.kind, self.nbytes, self.dist = kind, nbytes, dist
        self.host = host_buffer(nbytes, dist.device) if kind == "host" else None
        self._symm = None
        if kind == "peer":
            from .symm import symmetric_buffer

            self._symm = symmetric_buffer(nbytes, dist)
        from .platform_info import link_name

        self.link = link_name(kind, dist.device.index, (dist.device.index + 1) % max(dist.world, 2))

    def remote(self, owner: int):
        """uint8 CUDA tensor: where this GPU's stores bound for ``owner`` go."""
        if self.kind == "host":
            return self.host.cuda
        return self._symm.peer_view(owner)

    def remote_ptr(self, owner: int) -> int:
        return self.host.ptr if self.kind == "host" else self._symm.peer_ptr(owner)

    def receive_view(self):
        """What this rank receives into (peer: its own symmetric buffer; host: its host buffer)."""
        return self.host.cuda if self.kind == "host" else self._symm.buffer

    @property
    def is_receiver_local(self) -> bool:
        """True when the stores this rank issues are received (and checked) on this rank."""
        return self.kind == "host"


def make(kind: str, nbytes: int, dist) -> Destination:
    return Destination(kind, nbytes, dist)
