"""Load-gate microbenchmark: launcher, stamps to times, references (kernel in loadgate_kernels.py).

Device buffers of one launch:
    dst     uint8 [slots * B]       host (mapped pinned) or local; the launch writes one slot
    src     uint8 [CTAs * L]        device HBM the load phase streams (CTA q reads q*L .. q*L+L)
    result  int32 [CTAs]            per-CTA sum of its L bytes' 32-bit words (mod 2**32)
    stamps  int64 [CTAs, 8]         clock64 stamps (loadgate_kernels.py says which)
    info    int64 [CTAs, 8]         globaltimer edges, %smid, role, slot
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .loadgate_kernels import (INFO_WORDS, MODES, ROLE_FLAG_LOAD, ROLE_LATE, ROLE_LOAD, ROLE_STORE, ROLE_STORE_LOAD,
                               SOURCE, STAMP_WORDS, TMA_CHUNK_BYTES)

SOLO_SMEM_BYTES = 120 * 1024     # one CTA per SM (two do not fit 228 KB)
COSM_SMEM_BYTES = 100 * 1024     # exactly two CTAs per SM (three do not fit)
MAX_DYNAMIC_SMEM_BYTES = 160 * 1024   # static shared memory + this must stay under 227 KB
TIMEOUT_CYCLES = 2_000_000_000   # ~1 s at 2 GHz
STORE_ROLES = (ROLE_STORE_LOAD, ROLE_STORE)
LOAD_ROLES = (ROLE_STORE_LOAD, ROLE_LOAD, ROLE_FLAG_LOAD)
ERR_FLAGS = {1: "grid barrier timeout", 4: "flag wait timeout", 8: "impossible first word", 16: "bulk load timeout"}


@dataclass
class Run:
    stamps: np.ndarray   # int64 [CTAs, 8]
    info: np.ndarray     # int64 [CTAs, 8]
    result: np.ndarray   # int64 [CTAs] (uint32 values)
    kernel_us: float
    err: int


@dataclass(frozen=True)
class Times:
    """One launch's per-CTA times (us): spans on each CTA's own clock, starts on one timeline."""

    issue_us: np.ndarray       # [0] -> [1]: stores issued
    wait_us: np.ndarray        # [1] -> [2]: fence / gap / flag wait
    load_us: np.ndarray        # [2] -> [4]: the load phase
    first_load_us: np.ndarray  # [2] -> [3]: thread 0's first load
    after_issue_us: np.ndarray  # [1] -> [4]: stores issued to load end
    issued_at_us: np.ndarray   # [1] on the shared timeline (0 = earliest store start)
    load_start_at_us: np.ndarray  # [2] on the shared timeline
    store_start_at_us: np.ndarray  # [0] on the shared timeline
    load_end_at_us: np.ndarray     # [4] on the shared timeline
    smid: np.ndarray
    role: np.ndarray
    slot: np.ndarray


def times(stamps: np.ndarray, info: np.ndarray) -> Times:
    """Stamps to microseconds; clock64 mapped on %globaltimer through the per-CTA edges (integers first:
    globaltimer counts ns since 1970, a float64 there has a 256 ns step)."""
    stamps = np.asarray(stamps, dtype=np.int64)
    info = np.asarray(info, dtype=np.int64)
    d_ns = (info[:, 2] - info[:, 0]).astype(np.float64)
    d_clk = (info[:, 3] - info[:, 1]).astype(np.float64)
    if np.any(d_ns <= 0) or np.any(d_clk <= 0):
        raise ValueError("kernel clock edges are not increasing")
    ghz = d_clk / d_ns

    def span(a, b):
        return (stamps[:, b] - stamps[:, a]) / ghz / 1e3

    ns0 = (info[:, 0] - info[:, 0].min()).astype(np.float64)

    def at(k):
        return ns0 + (stamps[:, k] - info[:, 1]) / ghz

    origin = at(0).min()
    return Times(issue_us=span(0, 1), wait_us=span(1, 2), load_us=span(2, 4), first_load_us=span(2, 3),
                 after_issue_us=span(1, 4), issued_at_us=(at(1) - origin) / 1e3,
                 load_start_at_us=(at(2) - origin) / 1e3, store_start_at_us=(at(0) - origin) / 1e3,
                 load_end_at_us=(at(4) - origin) / 1e3, smid=info[:, 4].copy(), role=info[:, 5].copy(),
                 slot=info[:, 6].copy())


def samples(t: Times, burst_bytes: int) -> dict[str, np.ndarray]:
    """The samples one launch gives, by name (us). ``load_us``: the CTAs that loaded after storing (or,
    with B = 0 or in the co-resident mode, every loading CTA); ``bystander_load_us``: CTAs on other SMs
    that loaded without storing while others stored; ``flag_delay_us``: co-resident loader's load
    start minus its SM's storer's issue end."""
    role = t.role
    primary = np.isin(role, (ROLE_STORE_LOAD, ROLE_FLAG_LOAD)) if burst_bytes > 0 else np.isin(role, LOAD_ROLES)
    out = {"load_us": t.load_us[primary], "load_max_us": np.array([t.load_us[primary].max()]),
           "first_load_us": t.first_load_us[primary], "wait_us": t.wait_us[primary],
           "after_issue_us": t.after_issue_us[primary]}
    storers = np.isin(role, STORE_ROLES)
    if burst_bytes > 0 and storers.any():
        out["issue_us"] = t.issue_us[storers]
    bystanders = role == ROLE_LOAD
    if burst_bytes > 0 and bystanders.any() and (role == ROLE_STORE_LOAD).any():
        out["bystander_load_us"] = t.load_us[bystanders]
        out["bystander_first_load_us"] = t.first_load_us[bystanders]
    late = role == ROLE_LATE
    if late.any():   # set C of the late/stream variants: when its stores ran, against set A's load phase
        out["late_start_at_us"] = t.store_start_at_us[late]
        out["late_issued_at_us"] = t.issued_at_us[late]
        out["late_issue_us"] = t.issue_us[late]
        out["load_start_at_us"] = t.load_start_at_us[primary]
        out["load_end_at_us"] = t.load_end_at_us[primary]
    loaders = role == ROLE_FLAG_LOAD
    if loaders.any():
        issued = {int(s): t.issued_at_us[i] for i, s in enumerate(t.smid) if role[i] == ROLE_STORE}
        out["flag_delay_us"] = np.array([t.load_start_at_us[i] - issued[int(t.smid[i])]
                                         for i in np.flatnonzero(loaders)])
    return out


def layout_ok(t: Times, mode: str, ctas: int, sms: int) -> str | None:
    """None when the CTAs sat where the mode needs them; else why not."""
    counts = np.bincount(t.smid, minlength=sms)
    if mode in ("solo", "late") and counts.max() > 1:
        return f"two CTAs shared an SM in {mode} mode"
    if mode == "cosm":
        if ctas != 2 * sms or counts.min() != 2 or counts.max() != 2:
            return "co-resident mode needs exactly two CTAs on every SM"
        for s in range(sms):
            roles = sorted(t.role[t.smid == s].tolist())
            if roles != sorted([ROLE_STORE, ROLE_FLAG_LOAD]):
                return f"SM {s} holds roles {roles}"
    return None


class LoadGateKernel:
    """The compiled kernel on one GPU, with its small control buffers."""

    def __init__(self, device_index: int):
        import cupy
        import torch

        self._cupy, self._torch = cupy, torch
        self.device_index = device_index
        dev = torch.device("cuda", device_index)
        self.sms = torch.cuda.get_device_properties(dev).multi_processor_count
        with cupy.cuda.Device(device_index):
            self._mod = cupy.RawModule(code=SOURCE, options=("--std=c++17",), enable_cooperative_groups=True)
            self._fn = self._mod.get_function("loadgate")
            self._fn.max_dynamic_shared_size_bytes = MAX_DYNAMIC_SMEM_BYTES
            try:   # the largest shared-memory carveout, so that two 100 KB CTAs fit an SM
                self._fn.preferred_shared_memory_carveout = 100
            except Exception:  # noqa: BLE001 (an older cupy or driver: the hint is optional)
                pass
        self.bar = torch.zeros(1, dtype=torch.int32, device=dev)
        self.err = torch.zeros(1, dtype=torch.int32, device=dev)
        self.sm_count = torch.zeros(self.sms, dtype=torch.int32, device=dev)
        self.flags = torch.zeros(self.sms, dtype=torch.int32, device=dev)

    def run(self, dst_ptr: int, burst_bytes: int, src, load_bytes: int, result, ctas: int, n_store: int,
            mode: str, gap_cycles: int, fence: bool, tma_loads: bool, threads: int, late_bytes: int = 0,
            late_delay_cycles: int = 0, late_bursts: int = 0, late_spin_cycles: int = 0) -> Run:
        torch = self._torch
        if mode not in MODES:
            raise ValueError(f'"mode" must be one of {tuple(MODES)}.')
        if burst_bytes % 16 or late_bytes % 16 or load_bytes % (TMA_CHUNK_BYTES if tma_loads else 16):
            raise ValueError("burst_bytes must be a multiple of 16 and load_bytes of the load granule")
        if src.numel() < ctas * load_bytes or result.numel() < ctas:
            raise ValueError("src or result too small for the grid")
        dev = src.device
        stamps = torch.zeros(ctas * STAMP_WORDS, dtype=torch.int64, device=dev)
        info = torch.zeros(ctas * INFO_WORDS, dtype=torch.int64, device=dev)
        for buf in (self.bar, self.err, self.sm_count, self.flags):
            buf.zero_()
        u64 = np.uint64
        args = (u64(dst_ptr), u64(burst_bytes), u64(src.data_ptr()), u64(load_bytes), np.int32(int(tma_loads)),
                u64(result.data_ptr()), np.int64(gap_cycles), np.int32(int(fence)), np.int32(MODES[mode]),
                np.int32(n_store), u64(self.bar.data_ptr()), u64(self.sm_count.data_ptr()),
                u64(self.flags.data_ptr()), u64(self.err.data_ptr()), u64(stamps.data_ptr()), u64(info.data_ptr()),
                np.int64(TIMEOUT_CYCLES), u64(late_bytes), np.int64(late_delay_cycles), np.int32(late_bursts),
                np.int64(late_spin_cycles))
        smem = COSM_SMEM_BYTES if mode == "cosm" else SOLO_SMEM_BYTES
        stream = torch.cuda.current_stream(dev)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with self._cupy.cuda.Device(self.device_index), self._cupy.cuda.ExternalStream(stream.cuda_stream):
            start.record(stream)
            self._fn((ctas,), (threads,), args, shared_mem=smem)
            end.record(stream)
        end.synchronize()
        return Run(stamps=stamps.view(ctas, STAMP_WORDS).cpu().numpy(), info=info.view(ctas, INFO_WORDS).cpu().numpy(),
                   result=(result[:ctas].to(torch.int64) & 0xFFFFFFFF).cpu().numpy(),
                   kernel_us=start.elapsed_time(end) * 1e3, err=int(self.err.item()))


def region_sums(src_u8, ctas: int, load_bytes: int) -> np.ndarray:
    """Reference: per CTA, the sum of its L bytes' 32-bit words mod 2**32 (int64 [ctas])."""
    import torch

    words = src_u8[: ctas * load_bytes].view(torch.int32).view(ctas, load_bytes // 4).to(torch.int64)
    return (words.sum(dim=1) & 0xFFFFFFFF).cpu().numpy()


def check_result(run: Run, reference: np.ndarray, poison_word: int) -> tuple[bool, float]:
    """Every loading CTA's word equals the reference; a CTA that did not load left the poison."""
    role = run.info[:, 5]
    loads = np.isin(role, LOAD_ROLES)
    expect = np.where(loads, reference[: len(role)], poison_word)
    err = np.abs(run.result - expect)
    return bool(np.all(err == 0)), float(err.max())


def describe_err(err: int) -> str:
    return ", ".join(v for k, v in ERR_FLAGS.items() if err & k) or "none"
