"""Burst-store microbenchmark: launcher, reference and check (kernel source in
burst_store_kernels.py).

K producer CTAs, one per SM and co-resident (cooperative launch; a large dynamic
shared-memory request keeps a second CTA off each SM), each store B bytes per burst,
`bursts` times, with a gap of `gap_cycles` SM cycles after each burst. Device buffers:
    dst     uint8 [ring * K * B]     local, peer (symmetric memory) or host (mapped pinned)
                                     address; burst j writes ring slot j % ring
    stamps  int64 [K, bursts, 4]     clock64/globaltimer at issue start and end
    info    int64 [K, 8]             globaltimer edges at kernel start/end, %smid
    bar, err int32 [1]               grid-barrier counter, barrier-timeout flag
"""

from dataclasses import dataclass

import numpy as np

from .burst_store_kernels import INFO_WORDS, MECHANISMS, SOURCE, STAMP_WORDS
from .pattern import region_bytes, torch_check, torch_poison

ONE_CTA_PER_SM_SMEM_BYTES = 120 * 1024   # two of these do not fit one SM's 228 KB
MAX_DYNAMIC_SMEM_BYTES = 227 * 1024
BARRIER_TIMEOUT_CYCLES = 2_000_000_000   # ~1 s at 2 GHz


@dataclass
class Run:
    """Raw result of one launch (host copies)."""

    stamps: np.ndarray      # int64 [K, N, 4]
    info: np.ndarray        # int64 [K, 8]
    kernel_us: float        # CUDA-event time of the launch
    barrier_timeout: bool


class BurstStore:
    """The compiled kernels (one module per mechanism, compiled on first use) on one GPU."""

    def __init__(self, device_index: int):
        import cupy
        import torch

        self._cupy = cupy
        self._torch = torch
        self.device_index = device_index
        self._functions = {}
        dev = torch.device("cuda", device_index)
        self.bar = torch.zeros(1, dtype=torch.int32, device=dev)
        self.err = torch.zeros(1, dtype=torch.int32, device=dev)
        self.max_producers = torch.cuda.get_device_properties(dev).multi_processor_count

    def function(self, mechanism: str):
        if mechanism not in MECHANISMS:
            raise ValueError(f'"mechanism" must be one of {tuple(MECHANISMS)}.')
        if mechanism not in self._functions:
            with self._cupy.cuda.Device(self.device_index):
                mod = self._cupy.RawModule(
                    code=SOURCE, options=("--std=c++17", f"-DMECH={MECHANISMS[mechanism]}"),
                    enable_cooperative_groups=True)
                fn = mod.get_function("burst_store")
                fn.max_dynamic_shared_size_bytes = MAX_DYNAMIC_SMEM_BYTES
                self._functions[mechanism] = (mod, fn)
        return self._functions[mechanism][1]

    def run(self, dst_ptr: int, producers: int, burst_bytes: int, bursts: int,
            gap_cycles: int, aligned: bool, mechanism: str, threads: int, ring: int | None = None) -> Run:
        """Launch once, wait, return the stamps. Asserts the launch shape first.

        ``ring``: destination slots of K*B bytes (burst j writes slot j % ring); None: ``bursts``.
        """
        torch = self._torch
        if not 1 <= producers <= self.max_producers:
            raise ValueError(f'"producers" must be in [1, {self.max_producers}] (one per SM).')
        if burst_bytes % 16 or not 32 <= threads <= 1024:
            raise ValueError("burst_bytes must be a multiple of 16 and threads in [32, 1024]")
        smem = ONE_CTA_PER_SM_SMEM_BYTES
        if mechanism == "tma":
            smem = max(smem, burst_bytes)
        if smem > MAX_DYNAMIC_SMEM_BYTES:
            raise ValueError("tma staging buffer does not fit shared memory")
        ring = bursts if ring is None else ring
        if not 1 <= ring <= bursts:
            raise ValueError('"ring" must be in [1, bursts].')
        fn = self.function(mechanism)
        dev = torch.device("cuda", self.device_index)
        stamps = torch.zeros(producers * bursts * STAMP_WORDS, dtype=torch.int64, device=dev)
        info = torch.zeros(producers * INFO_WORDS, dtype=torch.int64, device=dev)
        self.bar.zero_()
        self.err.zero_()
        u64 = np.uint64
        args = (u64(dst_ptr), u64(burst_bytes), np.int32(bursts), np.int32(ring), np.int64(gap_cycles),
                np.int32(1 if aligned else 0), u64(self.bar.data_ptr()),
                u64(self.err.data_ptr()), u64(stamps.data_ptr()), u64(info.data_ptr()),
                np.int64(BARRIER_TIMEOUT_CYCLES))
        stream = torch.cuda.current_stream(dev)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        with self._cupy.cuda.Device(self.device_index), \
                self._cupy.cuda.ExternalStream(stream.cuda_stream):
            start.record(stream)
            fn((producers,), (threads,), args, shared_mem=smem)
            end.record(stream)
        end.synchronize()
        return Run(stamps=stamps.view(producers, bursts, STAMP_WORDS).cpu().numpy(),
                   info=info.view(producers, INFO_WORDS).cpu().numpy(),
                   kernel_us=start.elapsed_time(end) * 1e3,
                   barrier_timeout=bool(self.err.item()))

    def clock_ghz(self, scratch_ptr: int) -> float:
        """SM clock measured in-kernel against %globaltimer over a ~2 ms spin."""
        run = self.run(scratch_ptr, 1, 16, 2, 2_000_000, False, "st.v4", 32)
        d_clk = run.info[0, 3] - run.info[0, 1]
        d_ns = run.info[0, 2] - run.info[0, 0]
        return float(d_clk) / float(d_ns)

    def timer_resolution_ns(self, samples: int = 256) -> np.ndarray:
        """Distinct %globaltimer steps seen by one spinning thread (ns)."""
        torch = self._torch
        with self._cupy.cuda.Device(self.device_index):
            fn = self._functions.get("probe")
            if fn is None:
                mod = self._cupy.RawModule(code=SOURCE, options=("--std=c++17",))
                fn = (mod, mod.get_function("timer_probe"))
                self._functions["probe"] = fn
        out = torch.zeros(samples, dtype=torch.int64, device=torch.device("cuda", self.device_index))
        stream = torch.cuda.current_stream(out.device)
        with self._cupy.cuda.Device(self.device_index), \
                self._cupy.cuda.ExternalStream(stream.cuda_stream):
            fn[1]((1,), (32,), (np.uint64(out.data_ptr()), np.int32(samples)))
        torch.cuda.synchronize(out.device)
        return out.cpu().numpy()


def poison(buf_u8, producers: int, burst_bytes: int, bursts: int, ring: int | None = None) -> None:
    """Fill the region a run writes with the poison word (the reference is pattern.expected_buffer)."""
    torch_poison(buf_u8, region_bytes(producers, burst_bytes, bursts, ring))


def check(buf_u8, producers: int, burst_bytes: int, bursts: int, ring: int | None = None) -> tuple[bool, float]:
    """Destination (uint8 CUDA tensor: on its own GPU, or host memory read over PCIe) against the pattern."""
    return torch_check(buf_u8, producers, burst_bytes, bursts, ring)
