"""Fused MoE layer: launch settings and launcher (kernel in moe_kernels.py; inputs, torch
reference and check in moe_reference.py).

    data = moe_reference.make_inputs(shape, seed=0, device="cuda")
    fused = FusedMoE(shape, layout, table, data, out, config)  # out: [T, topk, H] bf16 view
    fused.launch(); fused.finish()                             # finish raises MoEKernelError
    ok, err = moe_reference.check(out, moe_reference.reference(data, layout, shape.topk))

`layout` and `table` follow MOE_CONTRACT.md (xsim.moe.layout.ExpertLayout and
xsim.moe.schedule.TileTable; any object with the same fields works); precision and scales
as moe_reference.MoEData.
The kernel is persistent: grid = table streams <= SMs x the CTAs one SM holds (one with the
shipped settings); FusedMoE asks the driver's occupancy calculator for the compiled kernel
before the first launch (hwkernels.occupancy).
"""

import os
from dataclasses import dataclass

import numpy as np

from .moe_reference import MoEData
from .moe_stamps import STAMP_COLS

DEFAULT_MAX_SPINS = 4_000_000   # ~1-4 s of polling on an H200: far above any real wait


class MoEKernelError(RuntimeError):
    """The kernel stopped on a wait timeout (a dependency never arrived)."""


COMBINE_HINTS = ("", "evict_first", "cs")


@dataclass(frozen=True)
class KernelConfig:
    """Launch settings of the fused kernel (block_m / block_n1 / block_n2 come from the shape)."""

    block_k: int = 64          # Linear-1 K step
    block_k2: int | None = None  # Linear-2 K step (None: block_k)
    num_warps: int = 8
    num_stages: int = 3
    signal: int = 0            # 0 release (correct), 1 relaxed (measures the release's cost)
    stamps: bool = False
    max_spins: int = DEFAULT_MAX_SPINS
    tma: bool = True           # weights and L2's activations through TMA descriptors
    acc_k1: int = 0            # fp8: promote the accumulator every acc_k1 K (0: never; L1;
    acc_k2: int = 0            # -1: an fp32 add per K step); acc_k2 the same for Linear-2
    num_stages2: int | None = None  # Linear-2's pipeline depth (None: num_stages)
    poll: int = 1              # L2 wait: 1 ld.acquire polls, 0 relaxed polls + one acquire
    host_desc: bool = False    # TMA descriptors made on the host (True) or in the kernel
    maxnreg: int | None = None  # register cap per thread (None: the compiler's choice)
    combine_hint: str = ""     # the Combine stores' L2 hint: "" (none), "evict_first", "cs" (st.global.cs)

    def __post_init__(self):
        for name in ("block_k", "block_k2"):
            v = getattr(self, name)
            if v is not None and (v < 16 or v & (v - 1)):
                raise ValueError(f'"{name}" must be a power of two >= 16.')
        for name, bk in (("acc_k1", self.block_k), ("acc_k2", self.k2)):
            v = getattr(self, name)
            if v < -1 or v > bk or (v > 0 and v % 32):
                raise ValueError(f'"{name}" must be -1, 0 or a multiple of 32 <= its block_k.')
        if self.num_stages < 1 or (self.num_stages2 is not None and self.num_stages2 < 1):
            raise ValueError('"num_stages" and "num_stages2" must be >= 1.')
        if self.poll not in (0, 1):
            raise ValueError('"poll" must be 1 (acquire loads) or 0 (relaxed, then acquire).')
        if self.signal not in (0, 1):
            raise ValueError('"signal" must be 0 (release) or 1 (relaxed).')
        if self.max_spins < 1:
            raise ValueError('"max_spins" must be >= 1.')
        if self.maxnreg is not None and not 24 <= self.maxnreg <= 255:
            raise ValueError('"maxnreg" must be None or in [24, 255].')
        if self.combine_hint not in COMBINE_HINTS:
            raise ValueError(f'"combine_hint" must be one of {", ".join(map(repr, COMBINE_HINTS))}.')

    @property
    def k2(self) -> int:
        return self.block_k if self.block_k2 is None else self.block_k2

    @property
    def stages2(self) -> int:
        return self.num_stages if self.num_stages2 is None else self.num_stages2


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def mblock_bounds(layout, block_m: int) -> tuple[np.ndarray, np.ndarray]:
    """Per global m-block: its first row and its expert's end row (int32 arrays)."""
    rows = np.asarray(layout.expert_rows, dtype=np.int64)
    mbs = np.asarray(layout.expert_mblock, dtype=np.int64)
    row0, rend = [], []
    for e in range(len(rows) - 1):
        for j in range(int(mbs[e + 1] - mbs[e])):
            row0.append(rows[e] + j * block_m)
            rend.append(rows[e + 1])
    return np.asarray(row0, dtype=np.int32), np.asarray(rend, dtype=np.int32)


class FusedMoE:
    """Device copies of one (shape, layout, table) and the kernel launch around them."""

    def __init__(self, shape, layout, table, data: MoEData, out, config: KernelConfig,
                 ready: bool = False, rank_outs=None):
        """ready: start every l2_full counter at l1_nblocks (L2-only GEMM measurements).

        rank_outs (EP > 1): every rank's destination view as seen from this GPU (out is
        rank_outs[0]'s role: the base the kernel's element offsets are taken from).
        """
        import torch

        self.shape, self.config, self.data, self.out = shape, config, data, out
        dev = data.x.device
        i32 = torch.int32
        h, inter = shape.hidden, shape.intermediate
        if h % config.block_k or inter % config.k2:
            raise ValueError('"block_k" must divide hidden and "block_k2" intermediate.')
        if int(table.l1_nblocks) != inter // shape.block_n1:
            raise ValueError("table.l1_nblocks does not match intermediate // block_n1.")
        row0, rend = mblock_bounds(layout, shape.block_m)
        as_dev = lambda a, dt: torch.as_tensor(np.ascontiguousarray(a)).to(dt).to(dev)  # noqa
        self.row_token = as_dev(layout.row_token, i32)
        self.row_slot = as_dev(layout.row_slot, i32)
        self.row_weight = as_dev(layout.row_weight, torch.float32)
        self.mb_row0, self.mb_rend = as_dev(row0, i32), as_dev(rend, i32)
        self.tiles = as_dev(np.asarray(table.tiles).reshape(-1, 4), i32)
        self.offsets = as_dev(table.offsets, i32)
        self.n_streams = len(table.offsets) - 1
        self.n_tiles = self.tiles.shape[0]
        n_rows = max(len(layout.row_token), 1)
        act_dtype = torch.float8_e4m3fn if data.precision == "fp8" else torch.bfloat16
        self.act = torch.zeros(n_rows, inter, dtype=act_dtype, device=dev)   # TMA reads past rend
        self.l2_full = torch.zeros(max(len(row0), 1), dtype=i32, device=dev)
        self.err = torch.zeros(2, dtype=i32, device=dev)
        self.stamps = torch.zeros(max(self.n_tiles, 1), STAMP_COLS, dtype=torch.int64,
                                  device=dev)
        outs = list(rank_outs) if rank_outs is not None else [out]
        if len(outs) != shape.ep:
            raise ValueError(f'"rank_outs" must hold {shape.ep} buffers, got {len(outs)}.')
        deltas = [o.data_ptr() - out.data_ptr() for o in outs]
        if any(d % 16 for d in deltas):
            raise ValueError("destination buffers must be 16-byte aligned relative to out.")
        self.dest_delta = torch.tensor([d // 2 for d in deltas], dtype=torch.int64, device=dev)
        self.sm = torch.full((max(self.n_streams, 1),), -1, dtype=i32, device=dev)
        self.clock = torch.zeros(2, dtype=torch.int64, device=dev)   # CLK sums (cycles, ns)
        self.ready_count = int(table.l1_nblocks) if ready else 0
        self.resources = {}
        self._checked = interpreting()

    def _args(self):
        s, c = self.shape, self.config
        bk2 = c.k2
        pos = (self.data.x, self.data.w1, self.data.w2, self.act, self.out, self.row_token,
               self.row_slot, self.row_weight, self.mb_row0, self.mb_rend, self.l2_full,
               self.tiles, self.dest_delta, self.offsets, self.data.scales, self.err, self.stamps, self.sm,
               self.clock, c.max_spins, self.act.shape[0], *self._host_descs())
        kw = dict(H=s.hidden, I=s.intermediate, E=s.experts // s.ep, TOPK=s.topk,
                  T_LOCAL=s.tokens, EP=s.ep,
                  BM=s.block_m, BN1=s.block_n1, BN2=s.block_n2, BK1=c.block_k, BK2=bk2,
                  FP8=self.data.precision == "fp8", SIGNAL=c.signal,
                  STAMPS=c.stamps and not interpreting(), TMA=c.tma,
                  ACC_K1=c.acc_k1 if self.data.precision == "fp8" else 0,
                  ACC_K2=c.acc_k2 if self.data.precision == "fp8" else 0,
                  NS1=c.num_stages, NS2=c.stages2, POLL=0 if interpreting() else c.poll,
                  HOST_DESC=c.host_desc, INTERPRET=interpreting(), CLK=not interpreting(),
                  CMOD=".cs" if c.combine_hint == "cs" else "",
                  EVICT="evict_first" if c.combine_hint == "evict_first" else "")
        if not interpreting():
            kw.update(num_warps=c.num_warps, num_stages=c.num_stages)
            if c.maxnreg is not None:
                kw["maxnreg"] = c.maxnreg
        return pos, kw

    def _host_descs(self):
        """(w1, w2, act) TMA descriptors made on the host (config.host_desc), else the plain
        tensors (the kernel then makes its own and ignores these arguments)."""
        s, c, d = self.shape, self.config, self.data
        if not (c.tma and c.host_desc):
            return d.w1, d.w2, self.act
        from triton.tools.tensor_descriptor import TensorDescriptor

        h, inter = s.hidden, s.intermediate
        return (TensorDescriptor(d.w1, [d.w1.shape[0] * 2 * inter, h], [h, 1],
                                 [s.block_n1, c.block_k]),
                TensorDescriptor(d.w2, [d.w2.shape[0] * h, inter], [inter, 1],
                                 [s.block_n2, c.k2]),
                TensorDescriptor(self.act, [self.act.shape[0], inter], [inter, 1],
                                 [s.block_m, c.k2]))

    def _check_coresident(self, pos, kw):
        """Raise unless all programs of the table are resident at once (hwkernels.occupancy)."""
        import triton

        from .moe_kernels import moe_fused_kernel
        from .occupancy import check_coresident, ctas_per_sm

        dev = self.data.x.device.index or 0
        sms = triton.runtime.driver.active.utils.get_device_properties(dev)["multiprocessor_count"]
        k = moe_fused_kernel.warmup(*pos, grid=(self.n_streams,), **kw)
        k._init_handles()
        per_sm = ctas_per_sm(k.function, 32 * kw["num_warps"], k.metadata.shared)
        check_coresident(self.n_streams, sms, per_sm)
        self.resources = {"regs_per_thread": k.n_regs, "shared_bytes": k.metadata.shared,
                          "spills": getattr(k, "n_spills", 0), "ctas_per_sm": per_sm}
        self._checked = True

    def prepare(self):
        """Reset the counters, the error flag and the clock sums (enqueued, no sync)."""
        self.l2_full.fill_(self.ready_count)
        self.err.zero_()
        self.clock.zero_()

    def enqueue(self):
        """Enqueue one kernel run (no sync); the first call checks co-residency."""
        from .moe_kernels import moe_fused_kernel

        if getattr(self, "_launch_args", None) is None:
            self._launch_args = self._args()
        pos, kw = self._launch_args
        if kw["TMA"]:
            from .tma import set_tma_allocator

            set_tma_allocator("cpu" if os.environ.get("TRITON_INTERPRET", "0") == "1" else "cuda")
        if not self._checked:
            self._check_coresident(pos, kw)
        moe_fused_kernel[(self.n_streams,)](*pos, **kw)

    def launch(self):
        self.prepare()
        self.enqueue()

    def finish(self):
        """Synchronize and raise MoEKernelError if a wait timed out."""
        err = self.err.cpu().tolist()
        if err[0]:
            raise MoEKernelError(f"fused MoE kernel: wait timed out at tile {err[1] - 1} "
                                 f"(l2_full never reached {self.shape.intermediate // self.shape.block_n1})")

    def stamp_array(self) -> np.ndarray:
        return self.stamps[: self.n_tiles].cpu().numpy()

    def run_clock_mhz(self) -> float | None:
        """The mean SM clock of the launches since the last prepare(): every program's cycles
        over its nanoseconds (the kernel's CLK sums; None under the interpreter)."""
        from .harness import clock_sums_mhz

        return clock_sums_mhz(self.clock)

    def distinct_sms(self) -> bool:
        """True when every program ran on its own SM (needs stamps on)."""
        sm = self.sm[: self.n_streams].cpu().numpy()
        return bool(np.all(sm >= 0) and len(set(sm.tolist())) == self.n_streams)
