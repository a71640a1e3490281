"""Triton cross-check of the burst-store drain rate: the same stores, compiled by Triton.

Each program p writes producer p's B bytes for bursts j = 0..N-1 back to back (zero gap,
free-running), the same pattern and layout as burst_store (pattern.py). Triton compiles
the contiguous int32 stores through a tensor argument to 16-byte `st.global.v4`. Only the
CUDA-event kernel time is measured (no in-kernel stamps); compare bytes / kernel time with
the CUDA kernel's free-running zero-gap point of the same (K, B, N).
"""

from .pattern import C_J, C_P, C_W, MASK32


def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def burst_store_kernel(dst_ptr, BURSTS: tl.constexpr, WORDS: tl.constexpr, BLOCK: tl.constexpr,
                           CP: tl.constexpr, CJ: tl.constexpr, CW: tl.constexpr,
                           M32: tl.constexpr):
        # dst_ptr: int32 [bursts, K, WORDS]; program p = producer p
        p = tl.program_id(0)
        k = tl.num_programs(0)
        offs = tl.arange(0, BLOCK)
        for j in range(BURSTS):
            base = ((p.to(tl.int64) * CP) & M32) ^ (((p * 0 + j).to(tl.int64) * CJ) & M32)
            row = dst_ptr + (j * k + p).to(tl.int64) * WORDS
            for w0 in range(0, WORDS, BLOCK):
                w = (w0 + offs).to(tl.int64)
                val = base ^ ((w * CW) & M32)
                tl.store(row + w0 + offs, val.to(tl.uint32).to(tl.int32, bitcast=True))

    return burst_store_kernel


_KERNEL = None


def launch(dst_i32, producers: int, burst_bytes: int, bursts: int, num_warps: int = 8):
    """Enqueue the kernel (no timing, no sync): usable under TRITON_INTERPRET=1 on a CPU."""
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = _kernel()
    words = burst_bytes // 4
    _KERNEL[(producers,)](dst_i32, BURSTS=bursts, WORDS=words, BLOCK=min(words, 2048), CP=C_P,
                          CJ=C_J, CW=C_W, M32=MASK32, num_warps=num_warps)


def run(dst_i32, producers: int, burst_bytes: int, bursts: int, num_warps: int = 8) -> float:
    """Launch once on dst_i32 (int32 tensor, local or a peer view); return kernel microseconds."""
    import torch

    words = burst_bytes // 4
    if burst_bytes % 16 or words & (words - 1):
        raise ValueError('"burst_bytes" must be a power of two >= 16 for the Triton kernel.')
    if dst_i32.numel() < bursts * producers * words:
        raise ValueError("destination too small")
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    launch(dst_i32, producers, burst_bytes, bursts, num_warps)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3
