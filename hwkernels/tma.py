"""Global scratch for Triton's device-side tensor descriptors (TMA), for every kernel of ours.

``tl.make_tensor_descriptor`` inside a kernel needs global scratch (128 B per descriptor and
program), which Triton asks a process-wide allocator for at each launch.
"""

from __future__ import annotations

_DEVICE: str | None = None


def set_tma_allocator(device) -> None:
    """Allocate descriptor scratch on ``device`` (a torch device or its name); set once per
    device, so a launch loop pays nothing after the first call."""
    global _DEVICE
    if _DEVICE == str(device):
        return
    import torch
    import triton

    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=device))
    _DEVICE = str(device)
