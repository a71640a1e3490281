"""A one-program kernel that busy-waits on %globaltimer: an idle gap inside a CUDA graph (hwkernels.fa_duty)."""

import triton

from .fa_kernels import _globaltimer_ns


@triton.jit
def spin_kernel(ns):
    t0 = _globaltimer_ns()
    t = t0
    while t - t0 < ns:
        t = _globaltimer_ns()
