"""How many CTAs of one compiled kernel an SM holds at once, and the persistent kernel's
co-residency rule on top of it (GPU only for ctas_per_sm; the rule is pure).

    per_sm = ctas_per_sm(function, threads, shared_bytes)   # the CUDA driver's calculator
    check_coresident(n_streams, sms, per_sm)                 # raises unless all fit at once

A persistent kernel whose programs wait on each other must have every program resident at
the same time (nothing else running): grid <= SMs x CTAs per SM, the rule a cooperative
launch enforces. ctas_per_sm asks cuOccupancyMaxActiveBlocksPerMultiprocessor, which counts
registers, shared memory (the kernel's dynamic bytes plus the per-CTA reserve), threads and
the per-SM block limit, for the compiled function as loaded (its dynamic-shared attribute set).
"""

import ctypes


def ctas_per_sm(function: int, threads: int, shared_bytes: int) -> int:
    """CTAs of `threads` threads and `shared_bytes` dynamic shared memory per SM (driver)."""
    lib = ctypes.CDLL("libcuda.so.1")
    n = ctypes.c_int(0)
    rc = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(n), ctypes.c_void_p(function), ctypes.c_int(threads),
        ctypes.c_size_t(shared_bytes))
    if rc != 0:
        raise RuntimeError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor failed (CUresult {rc})")
    return n.value


def check_coresident(n_streams: int, sms: int, per_sm: int) -> None:
    """Raise ValueError unless n_streams programs fit on sms SMs holding per_sm CTAs each."""
    if per_sm < 1:
        raise ValueError("one CTA per SM does not fit (registers or shared memory): "
                         "programs not co-resident")
    if n_streams > sms * per_sm:
        raise ValueError(f'"n_streams" must be <= {sms} SMs x {per_sm} CTAs per SM = '
                         f"{sms * per_sm} for co-residency, got {n_streams}.")
