"""The FA + A2A variants on one shape: buffers, one enqueue function per variant, checks.

    case = Case(shape, KernelConfig(), host_bytes_view, programs=132)
    enqueue = case.enqueue("fused", slot=0)      # launches once on the current stream, no sync
    ok, err = case.check("fused")                # receiver side, every ring slot

Variants (FA_CONTRACT.md kinds): "fa-only" (output stays local), "a2a-store" (our store
kernel moves the reference output into the owners' buffers), "a2a-ce" (the copy engine moves
it), "serial" (fa-only then a2a-store), "fused", "cc-asm" / "cc-atomic" (completion-coupled,
fence.sc.sys or a release atomic at system scope after each tile), "fused-paced" (fused with
the producer's phase changed: a remote tile's stores spread over the program's next Q-loop in
cfg.pace row chunks, tiles in cfg.pace_order), "sdpa-cudnn" (torch's cuDNN SDPA, local
output). cfg.mainloop "gluon": the attention kernel is fa_gluon's (GLUON_VARIANTS only). Remote
stores go to `slots` ring slots of the other owners' buffers (fresh addresses, see
hwkernels.destination): launch i of a graph writes slot i % slots.
"""

from dataclasses import dataclass

import numpy as np

from . import fa
from .fa import FAShape, OwnerBuffers
from .harness import clock_sums_mhz

VARIANTS = ("fa-only", "a2a-store", "a2a-ce", "serial", "fused", "fused-paced", "cc-asm",
            "cc-atomic", "sdpa-cudnn")
REMOTE_VARIANTS = ("a2a-store", "a2a-ce", "serial", "fused", "fused-paced", "cc-asm", "cc-atomic")
INSTRUMENTED = ("fa-only", "fused", "fused-paced", "cc-asm", "cc-atomic")
MAINLOOPS = ("triton", "gluon")
GLUON_VARIANTS = ("fa-only", "a2a-store", "a2a-ce", "serial", "fused", "fused-paced", "cc-asm",
                  "sdpa-cudnn")


def record_kind(variant: str) -> str:
    """FA_CONTRACT.md kind of a variant ("cc-asm" and "cc-atomic" are both kind "cc")."""
    return "cc" if variant.startswith("cc-") else variant


@dataclass(frozen=True)
class KernelConfig:
    num_warps: int = 8
    num_stages: int = 3
    tma: bool = False
    a2a_warps: int = 4
    flatten: bool = False           # persistent loop as tl.range(flatten=True)
    ws: bool = False                # persistent loop as tl.range(warp_specialize=True)
    pace: int = 8                   # fused-paced: row chunks per tile
    pace_spread: bool = True        # ... spread over the whole next Q-loop (else one per KV step)
    pace_order: str = "remote-first"
    pace_branch: bool = True        # ... chunk code under a uniform if (else masked every step)
    pace_pf: bool = False           # ... each chunk read from the stage one chunk step early
                                    # (off: the kernel of the shipped records, run 5; on was
                                    # faster in two paired A/Bs, docs/fa-a2a.md "Run 6")
    swp: bool = False               # Q-loop software-pipelined by one KV step (P V overlaps softmax)
    emu: int = 1                    # softmax exp2: this many of every 8 on the FMA pipe (fa_exp2;
                                    # 1 shipped since call lsum-call1, 0 the kernel before it)
    early: bool = False             # softmax: alpha and the acc rescale first (fa_qloop)
    split: bool = False             # fa-only: the last partial wave split along KV (fa_split)
    lsum: bool = False              # softmax row sums as P @ ones on the tensor cores (fa_qloop)
    qpf: int = 0                    # next tile's Q (2: + first K, V) prefetched into L2 (fa.QPFS)
    qreg: bool = True               # next tile's Q loaded into registers during the epilogue
                                    # (shipped since call faspeed2-1; False: the kernel before)
    mainloop: str = "triton"        # "gluon": fa-only, fused, fused-paced and cc-asm on fa_gluon's
                                    # warp-specialized forward (the other options do not apply)
    stagger_us: float = 0.0         # gluon fused / cc: program p starts stagger_us * p / K late

    @property
    def pf(self) -> bool:
        """pace_pf as run: PF is an option of the plain Q-loop (a swp config runs without it)."""
        return self.pace_pf and not self.swp

    def __post_init__(self):
        if self.num_warps not in (1, 2, 4, 8, 16):
            raise ValueError(f'"num_warps" must be a power of two <= 16, got {self.num_warps}.')
        if self.num_stages < 1:
            raise ValueError(f'"num_stages" must be >= 1, got {self.num_stages}.')
        if self.pace not in fa.PACES:
            raise ValueError(f'"pace" must be one of {fa.PACES}, got {self.pace}.')
        if self.pace_order not in fa.ORDERS:
            raise ValueError(f'"pace_order" must be one of {sorted(fa.ORDERS)}, got {self.pace_order!r}.')
        if self.qpf not in fa.QPFS:
            raise ValueError(f'"qpf" must be one of {fa.QPFS}, got {self.qpf}.')
        if self.emu not in fa.EMUS:
            raise ValueError(f'"emu" must be one of {fa.EMUS}, got {self.emu}.')
        if self.mainloop not in MAINLOOPS:
            raise ValueError(f'"mainloop" must be one of {MAINLOOPS}, got {self.mainloop!r}.')
        if self.stagger_us < 0 or (self.stagger_us and self.mainloop != "gluon"):
            raise ValueError(f'"stagger_us" must be >= 0 and needs the Gluon mainloop, got '
                             f'{self.stagger_us!r} on {self.mainloop!r}.')


def program_ghz(st: np.ndarray, programs: int) -> np.ndarray:
    """Each program's mean SM clock in GHz over its stamped run (stamps int64 [n_tiles, 6], tile t
    on program t % programs): %clock64 cycles over %globaltimer ns from its first tile's start to
    its last tile's stores."""
    ghz = []
    for p in range(min(programs, st.shape[0])):
        rows = st[p::programs]
        d_ns = float(rows[-1, 2] - rows[0, 0])
        d_clk = float(rows[-1, 5] - rows[0, 3])
        if d_ns <= 0 or d_clk <= 0:
            raise ValueError(f"program {p}: stamps are not increasing")
        ghz.append(d_clk / d_ns)
    return np.asarray(ghz)


def tile_times(stamps: np.ndarray, programs: int) -> dict:
    """Per-tile times from the kernel's stamps (int64 [n_tiles, 6], see fa_kernels.py).

    Spans use %clock64 (cycle resolution) at each program's SM clock, measured from
    %globaltimer over the program's whole run. Returns microsecond arrays "issue_span_us"
    (Q-loop end .. stores issued), "qloop_us" (tile start .. Q-loop end), "gap_us" (stores
    issued .. next tile's Q-loop end, the drain window G_Qloop), and "clock_mhz" per program.
    """
    st = np.asarray(stamps, dtype=np.int64)
    issue, qloop, gaps = [], [], []
    per_program = program_ghz(st, programs)
    for p, ghz in enumerate(per_program):
        rows = st[p::programs]
        issue.append((rows[:, 5] - rows[:, 4]) / ghz / 1e3)
        qloop.append((rows[:, 4] - rows[:, 3]) / ghz / 1e3)
        gaps.append((rows[1:, 4] - rows[:-1, 5]) / ghz / 1e3)
    out = {"issue_span_us": np.concatenate(issue), "qloop_us": np.concatenate(qloop),
           "clock_mhz": per_program * 1e3}
    g = np.concatenate(gaps)
    if g.size:
        out["gap_us"] = g
    return out


class Case:
    """Inputs, reference and receive buffers of one shape; enqueue and check every variant.

    host_view: a uint8 CUDA tensor aliasing host memory (the `host` destination), at least
    slots * shape.remote_bytes bytes; slot s holds [N-1, batch, M/N, H, d] at s*remote_bytes.
    bufs (N ranks, fa_dist.PeerCase): the `slots` OwnerBuffers to store into instead (then
    host_view is None and `device` says where the inputs live).
    """

    def __init__(self, shape: FAShape, cfg: KernelConfig, host_view, slots: int,
                 programs: int, seed: int = 0, bufs=None, device=None):
        import torch

        if bufs is None and host_view.numel() < slots * shape.remote_bytes:
            raise ValueError("host buffer smaller than slots * remote bytes")
        self.shape, self.cfg, self.slots, self.programs = shape, cfg, slots, programs
        dev = host_view.device if bufs is None else device
        self.q, self.k, self.v = fa.generate_input(shape, seed, dev)
        self.ref = fa.reference(self.q, self.k, self.v)
        self.ref_bf16 = self.ref.to(torch.bfloat16).contiguous()
        self.out = torch.empty(shape.qkv_shape, dtype=torch.bfloat16, device=dev)
        if bufs is not None:
            self.local_owner, self.bufs = bufs[0].local, list(bufs)
        else:
            self.local_owner = torch.empty(shape.owner_shape, dtype=torch.bfloat16, device=dev)
            n = shape.remote_bytes
            self.bufs = [OwnerBuffers(self.local_owner, host_view[s * n:(s + 1) * n]
                                      .view(torch.bfloat16).view(shape.sp - 1, *shape.owner_shape))
                         for s in range(slots)]
        self.flags = torch.zeros(max(programs, 1), dtype=torch.int32, device=dev)
        self.clock = torch.zeros(2, dtype=torch.int64, device=dev)   # CLK sums (Gluon mainloop)
        self.stamps = torch.zeros((shape.n_tiles, fa.STAMP_WORDS), dtype=torch.int64, device=dev)
        self.stage = torch.empty(max(programs, 1) * shape.block_m * shape.head_dim,
                                 dtype=torch.bfloat16, device=dev)
        self.sdpa_out = None
        self._memcpy2d = None
        self.compiled = None       # Triton's handle of the last FA launch (regs, spills, smem)
        self._split_ws = None      # fa_split.SplitWorkspace (cfg.split, fa-only)
        if cfg.split:              # allocated here, not inside a graph capture
            from . import fa_split

            self._split_ws = fa_split.SplitWorkspace.allocate(shape, programs, dev)
            self._split_stamped_out = torch.empty_like(self.out)

    # -- enqueue -----------------------------------------------------------------------------
    def _fa(self, mode, slot=0, fence="atomic", stamps=None):
        c = self.cfg
        if c.mainloop == "gluon":
            self._fa_gluon(mode, slot, fence, stamps)
            return
        if mode == fa.MODE_LOCAL and c.split and stamps is None:
            self._fa_split()
            return
        out = self.out
        if mode == fa.MODE_LOCAL and c.split:   # stamps: the unsplit kernel, into its own buffer
            out = self._split_stamped_out      # (the check reads the timed split kernel's)
        self.compiled = fa.launch_fa(self.q, self.k, self.v, self.shape, mode, out=out,
                     bufs=self.bufs[slot], programs=self.programs, fence=fence,
                     stamps=stamps, flags=self.flags, num_warps=c.num_warps,
                     num_stages=c.num_stages, tma=c.tma, pace=c.pace, spread=c.pace_spread,
                     stage=self.stage, order=c.pace_order if mode == fa.MODE_PACED else "default",
                     flatten=c.flatten, ws=c.ws, branch=c.pace_branch, swp=c.swp,
                     emu=c.emu, early=c.early, lsum=c.lsum, qpf=c.qpf, qreg=c.qreg,
                     pf=c.pf)

    def _fa_gluon(self, mode, slot, fence, stamps):
        from . import fa_gluon_launch

        c = self.cfg
        if mode == fa.MODE_CC and fence != "asm":
            raise ValueError(f'the Gluon mainloop runs {GLUON_VARIANTS}, not cc-atomic.')
        if mode == fa.MODE_PACED and (c.pace != fa_gluon_launch.PACE or not c.pace_spread
                                      or not c.pace_branch or c.pf):
            raise ValueError(f'the Gluon fused-paced kernel runs pace {fa_gluon_launch.PACE}, '
                             'spread, under a uniform branch, without PF.')
        self.compiled = fa_gluon_launch.launch_gluon_fa(
            self.q, self.k, self.v, self.shape, mode, out=self.out, bufs=self.bufs[slot],
            stamps=stamps, programs=self.programs, stage=self.stage, order=c.pace_order,
            clock=self.clock,
            stagger_ns=round(c.stagger_us * 1e3) if mode in (fa.MODE_FUSED, fa.MODE_CC) else 0)

    def _fa_split(self):
        from . import fa_split

        c = self.cfg
        self.compiled = fa_split.launch_fa_split(
            self.q, self.k, self.v, self.shape, self.out, self._split_ws, programs=self.programs,
            num_warps=c.num_warps, num_stages=c.num_stages, tma=c.tma, emu=c.emu,
            early=c.early, lsum=c.lsum, qreg=c.qreg)

    def _a2a(self, src, slot):
        fa.launch_a2a_store(src, self.bufs[slot], self.shape, self.programs, self.cfg.a2a_warps)

    def store_out(self, slot: int) -> None:
        """The A2A store kernel of the FA output into ring slot ``slot`` (serial's second kernel)."""
        self._a2a(self.out, slot)

    def _ce(self, slot):
        import torch

        if self._memcpy2d is None:
            import cupy

            rt = cupy.cuda.runtime

            def memcpy2d(dst, dpitch, src, spitch, width, rows):
                rt.memcpy2DAsync(dst, dpitch, src, spitch, width, rows, rt.memcpyDefault,
                                 torch.cuda.current_stream().cuda_stream)
            self._memcpy2d = memcpy2d
        fa.a2a_copy_engine(self.ref_bf16, self.bufs[slot], self.shape, self._memcpy2d)

    def _cudnn(self):
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            self.sdpa_out = torch.nn.functional.scaled_dot_product_attention(self.q, self.k, self.v)

    def enqueue(self, variant: str, slot: int = 0, instrument: bool = False):
        """Enqueue one launch of `variant` writing ring slot `slot` (no sync)."""
        stamps = self.stamps if instrument else None
        if variant == "fa-only":
            self._fa(fa.MODE_LOCAL, stamps=stamps)
        elif variant == "a2a-store":
            self._a2a(self.ref_bf16, slot)
        elif variant == "a2a-ce":
            self._ce(slot)
        elif variant == "serial":
            self._fa(fa.MODE_LOCAL)
            self.store_out(slot)
        elif variant == "fused":
            self._fa(fa.MODE_FUSED, slot, stamps=stamps)
        elif variant == "fused-paced":
            self._fa(fa.MODE_PACED, slot, stamps=stamps)
        elif variant in ("cc-asm", "cc-atomic"):
            self._fa(fa.MODE_CC, slot, fence=variant[3:], stamps=stamps)
        elif variant == "sdpa-cudnn":
            self._cudnn()
        else:
            raise ValueError(f'"variant" must be one of {VARIANTS}, got {variant!r}.')

    def run_clock_mhz(self) -> float | None:
        """The mean SM clock of the Gluon launches since the clock sums were last zeroed: every
        program's consumer-0 cycles over its nanoseconds (CLK), so the clock of the timed runs
        themselves, not of a separate stamped one (None: no Gluon launch ran, e.g. a2a-store)."""
        return clock_sums_mhz(self.clock)

    def ring(self, variant: str):
        """A function enqueuing `slots` launches of `variant`, launch i into slot i."""
        def run_ring():
            for s in range(self.slots):
                self.enqueue(variant, s)
        return run_ring

    # -- poison and check --------------------------------------------------------------------
    def poison(self, variant: str) -> None:
        fa.poison(self.out, self.local_owner)
        if self.sdpa_out is not None:
            fa.poison(self.sdpa_out)
        if variant in REMOTE_VARIANTS:
            for b in self.bufs:
                fa.poison(b.remote)

    def check(self, variant: str) -> tuple[bool, float]:
        """Receiver side: the local output, or every owner's slice in every ring slot."""
        if variant == "sdpa-cudnn":
            return fa.check_local(self.sdpa_out, self.ref)
        if variant not in REMOTE_VARIANTS:
            return fa.check_local(self.out, self.ref)
        worst, ok = 0.0, True
        for b in self.bufs:
            good, err = fa.check_owners(self.ref, b, self.shape)
            ok, worst = ok and good, max(worst, err)
        return ok, worst

    def tile_times(self) -> dict:
        return tile_times(self.stamps.cpu().numpy(), min(self.programs, self.shape.n_tiles))
