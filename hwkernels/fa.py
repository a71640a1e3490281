"""FA + post-attention A2A: shapes, launchers, the torch reference and the receiver-side check.

    shape = FAShape(batch=1, heads=32, seq_len=8192, head_dim=128, sp=4)
    q, k, v = generate_input(shape, seed=0, device="cuda")
    bufs = OwnerBuffers.allocate(shape, remote)         # owner r in HBM, others in `remote`
    launch_fa(q, k, v, shape, Variant.FUSED, bufs=bufs, programs=132)
    ok, err = check_owners(reference(q, k, v), bufs, shape)

Kernels are in fa_kernels.py, index math in fa_layout.py. torch and triton are imported
lazily (the module imports without them).
"""

import math
from dataclasses import dataclass

from . import fa_layout
from .tma import set_tma_allocator

MODE_LOCAL, MODE_FUSED, MODE_CC, MODE_PACED = 0, 1, 2, 3
ORDERS = {"default": 0, "remote-first": 1}  # fa_layout.tiles | fa_layout.remote_first_coords
PACES = (1, 2, 4, 8, 16)
EMUS = (0, 1, 2, 3, 4)                     # softmax exp2 elements of 8 on the FMA pipe (fa_exp2)
QPFS = (0, 1, 2)                           # L2 prefetch at tile start: none | next Q | + first K, V
FENCES = {"asm": 1, "atomic": 2}          # completion-coupled: fence.sc.sys | release atomic
STAMP_WORDS = 6
ATOL = 2e-2                                # bf16 output vs the float32 reference


@dataclass(frozen=True)
class FAShape:
    """One rank's attention problem and tiling (Ulysses SP = sp, this rank = rank)."""

    batch: int
    heads: int
    seq_len: int
    head_dim: int
    sp: int
    rank: int = 0
    block_m: int = 128
    block_n: int = 128
    dtype: str = "bf16"

    def __post_init__(self):
        fa_layout.check_shape(self.batch, self.heads, self.seq_len, self.head_dim, self.sp,
                              self.block_m, self.dtype)
        if not 0 <= self.rank < self.sp:
            raise ValueError(f'"rank" must be in [0, {self.sp}), got {self.rank}.')
        if self.block_n < 16 or self.seq_len % self.block_n:
            raise ValueError(f'"seq_len" M ({self.seq_len}) must be divisible by "block_n" '
                             f'({self.block_n}).')

    @property
    def heads_local(self) -> int:
        return self.heads // self.sp

    @property
    def n_tiles(self) -> int:
        return fa_layout.n_tiles(self.batch, self.heads_local, self.seq_len, self.block_m)

    @property
    def slice_elems(self) -> int:
        return fa_layout.slice_elems(self.batch, self.seq_len, self.heads, self.sp, self.head_dim)

    @property
    def qkv_shape(self) -> tuple:
        return (self.batch, self.heads_local, self.seq_len, self.head_dim)

    @property
    def owner_shape(self) -> tuple:
        return (self.batch, self.seq_len // self.sp, self.heads, self.head_dim)

    @property
    def out_bytes(self) -> int:
        """Bytes of this rank's attention output (what the A2A moves, own slice included)."""
        return self.batch * self.heads_local * self.seq_len * self.head_dim * 2

    @property
    def remote_bytes(self) -> int:
        return (self.sp - 1) * self.slice_elems * 2


@dataclass(frozen=True)
class OwnerBuffers:
    """Receiver side: `local` [batch, M/N, H, d] (owner == rank, HBM); `remote`
    [N-1, batch, M/N, H, d] (the other owners, in fa_layout.remote_slot order).

    N ranks (fa_dist.py): `owners` holds every owner's [batch, M/N, H, d] buffer as seen from
    this rank (separate allocations: its own is `local`), `remote` is one of them (the kernels'
    base pointer) and `delta` int64 [N] each owner's element offset from it."""

    local: object
    remote: object
    delta: object = None
    owners: tuple | None = None

    @staticmethod
    def allocate(shape: FAShape, remote, device=None):
        """remote: a bf16 tensor of >= (N-1) * slice_elems elements (e.g. a host buffer view)."""
        import torch

        if remote.numel() < (shape.sp - 1) * shape.slice_elems:
            raise ValueError('"remote" is smaller than the N-1 other owners\' slices.')
        remote = remote[:(shape.sp - 1) * shape.slice_elems].view(shape.sp - 1, *shape.owner_shape)
        local = torch.empty(shape.owner_shape, dtype=torch.bfloat16, device=device or remote.device)
        return OwnerBuffers(local, remote)

    def owner(self, o: int, rank: int):
        if self.owners is not None:
            return self.owners[o]
        return self.local if o == rank else self.remote[fa_layout.remote_slot(o, rank, self.remote.shape[0] + 1)]


def generate_input(shape: FAShape, seed: int = 0, device="cuda"):
    """Seeded q, k, v [batch, HL, M, d] bf16."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed)
    return tuple(torch.randn(shape.qkv_shape, generator=g, dtype=torch.float32)
                 .to(device=device, dtype=torch.bfloat16) for _ in range(3))


def reference(q, k, v):
    """torch SDPA in float32 (math precision), [batch, HL, M, d]."""
    import torch

    return torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())


def _interpreter_compat() -> bool:
    """True under TRITON_INTERPRET=1, after making Triton 3.6's interpreter usable here: it turns
    a scalar into an index with int() of a 1-element array, which numpy >= 2.3 refuses (index
    with its single element instead). It also keeps bf16 as raw uint16 and multiplies those
    integers in tl.dot, so the kernels get UPCAST=True (q, k, v cast to float32 after loads)."""
    import os

    if os.environ.get("TRITON_INTERPRET") != "1":
        return False
    from triton.runtime import interpreter

    if getattr(interpreter._patch_lang_tensor, "xstage_compat", False):
        return True
    original = interpreter._patch_lang_tensor

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    patched.xstage_compat = True
    interpreter._patch_lang_tensor = patched
    return True


def _launch_args(shape: FAShape) -> tuple:
    """(rank, hl, seq, sp, slice_elems): the runtime shape arguments of both kernels."""
    return (shape.rank, shape.heads_local, shape.seq_len, shape.sp, shape.slice_elems)


def pace_stride(shape: FAShape, pace: int, spread: bool) -> int:
    """KV steps between two paced row chunks: spread over the whole next Q-loop (M/b_n // pace
    steps apart), or one chunk per KV step."""
    return max(1, (shape.seq_len // shape.block_n) // pace) if spread else 1


def destinations(mode: int, out, bufs: OwnerBuffers | None) -> tuple:
    """(dst, remote, delta) a kernel of `mode` writes: FA-only `out` alone (its other pointer
    arguments point there too, unused), else the owner buffers of `bufs`."""
    if mode == MODE_LOCAL:
        return out, out, None
    return bufs.local, bufs.remote, bufs.delta


def launch_fa(q, k, v, shape: FAShape, mode: int, out=None, bufs: OwnerBuffers | None = None,
              programs: int = 132, fence: str = "atomic", stamps=None, flags=None,
              num_warps: int = 8, num_stages: int = 3, tma: bool = False, pace: int = 0,
              spread: bool = True, stage=None, order: str = "default", flatten: bool = False,
              ws: bool = False, branch: bool = True, swp: bool = False, emu: int = 0,
              early: bool = False, lsum: bool = False, qpf: int = 0, qreg: bool = False,
              pf: bool = False):
    """Enqueue fa_fwd_kernel (no sync). mode 0 writes `out` [batch, HL, M, d]; modes 1, 2, 3
    write `bufs`. stamps (int64 [n_tiles, 6]) turns the per-tile instrumentation on. mode 3
    (paced) needs pace (row chunks per tile, one of PACES) and `stage` (>= programs * b_m * d
    elements of the output dtype, HBM). swp: the Q-loop software-pipelined by one KV step
    (fa_qloop._qloop_swp). emu: exp2 of `emu` of every 8 softmax elements on the FMA pipe
    (EMUS). lsum: the softmax row sums as P @ ones on the tensor cores (fa_qloop). qpf: the
    program's next tile's Q (2: and its first K, V tiles) prefetched into L2 at each tile start
    (QPFS); qreg: the next tile's Q loaded into registers during each tile's epilogue. pf (mode 3):
    each paced chunk read from the stage one chunk step before its stores (not with swp).
    Returns Triton's handle of the compiled kernel."""
    from .fa_kernels import fa_fwd_kernel

    upcast = _interpreter_compat()
    if mode not in (MODE_LOCAL, MODE_FUSED, MODE_CC, MODE_PACED):
        raise ValueError(f'"mode" must be 0, 1, 2 or 3, got {mode!r}.')
    if order not in ORDERS:
        raise ValueError(f'"order" must be one of {sorted(ORDERS)}, got {order!r}.')
    grid = (max(1, min(programs, shape.n_tiles)),)
    if mode == MODE_PACED:
        if pace not in PACES or shape.block_m % pace:
            raise ValueError(f'"pace" must be one of {PACES} dividing block_m, got {pace!r}.')
        if stage is None or stage.numel() < grid[0] * shape.block_m * shape.head_dim:
            raise ValueError('the paced variant needs "stage" (>= programs * block_m * head_dim).')
        if pf and swp:
            raise ValueError('"pf" (paced chunks read one chunk step early) needs the plain '
                             'Q-loop, not swp.')
    else:
        pace, stage, pf = 0, None, False
    if emu not in EMUS or (emu and swp):
        raise ValueError(f'"emu" must be one of {EMUS} (0 with swp), got {emu!r}.')
    if qpf not in QPFS:
        raise ValueError(f'"qpf" must be one of {QPFS}, got {qpf!r}.')
    if fence not in FENCES:
        raise ValueError(f'"fence" must be one of {sorted(FENCES)}, got {fence!r}.')
    dst, remote, delta = destinations(mode, out, bufs)
    if mode == MODE_CC and fence == "atomic" and flags is None:
        raise ValueError('the completion-coupled atomic fence needs "flags" (int32 [programs]).')
    if flags is None:
        flags = dst
    if tma:
        set_tma_allocator(q.device)
    qk_scale = 1.0 / math.sqrt(shape.head_dim) * 1.4426950408889634
    stride = pace_stride(shape, pace, spread) if pace else 1
    return fa_fwd_kernel[grid](q, k, v, dst, remote, stamps if stamps is not None else dst, flags,
                        stage if stage is not None else dst, qk_scale, shape.n_tiles, grid[0],
                        *_launch_args(shape), stride, delta if delta is not None else dst,
                        D=shape.head_dim, DELTA=delta is not None, BLOCK_M=shape.block_m, BLOCK_N=shape.block_n,
                        MODE=mode, FENCE=FENCES[fence], INSTR=stamps is not None,
                        UPCAST=upcast, TMA=tma, PACE=pace,
                        CHUNK=shape.block_m // pace if pace else shape.block_m,
                        ORDER=ORDERS[order], FLATTEN=flatten, WS=ws, BRANCH=bool(branch),
                        SWP=bool(swp), EMU=int(emu), EARLY=bool(early), LSUM=bool(lsum),
                        QPF=int(qpf), QREG=bool(qreg), PF=bool(pf), num_warps=num_warps,
                        num_stages=num_stages)


def launch_a2a_store(out, bufs: OwnerBuffers, shape: FAShape, programs: int = 132,
                     num_warps: int = 8):
    """Enqueue the A2A store kernel: `out` [batch, HL, M, d] -> every owner's buffer."""
    from .fa_kernels import a2a_store_kernel

    _interpreter_compat()
    grid = (max(1, min(programs, shape.n_tiles)),)
    a2a_store_kernel[grid](out, bufs.local, bufs.remote, shape.n_tiles, grid[0],
                           *_launch_args(shape),
                           bufs.delta if bufs.delta is not None else bufs.local,
                           D=shape.head_dim, BLOCK_M=shape.block_m, DELTA=bufs.delta is not None,
                           num_warps=num_warps)


def a2a_copy_engine(out, bufs: OwnerBuffers, shape: FAShape, memcpy2d_async) -> int:
    """The same A2A by the copy engine: one 2-D copy per (b, h, owner), rows of d elements
    from `out` (pitch d) into the owner's buffer (pitch H*d). memcpy2d_async(dst_ptr, dpitch,
    src_ptr, spitch, width_bytes, rows) enqueues one copy. Returns the number of copies."""
    tpo, row_bytes = shape.seq_len // shape.sp, shape.head_dim * 2
    dpitch = shape.heads * row_bytes
    copies = 0
    for o in range(shape.sp):
        dst = bufs.owner(o, shape.rank)
        for b in range(shape.batch):
            for h in range(shape.heads_local):
                src_ptr = out[b, h, o * tpo].data_ptr()
                dst_ptr = dst[b, 0, shape.rank * shape.heads_local + h].data_ptr()
                memcpy2d_async(dst_ptr, dpitch, src_ptr, row_bytes, row_bytes, tpo)
                copies += 1
    return copies


def expected_owner_slice(ref, shape: FAShape, o: int):
    """Owner o's part of this rank's output, [batch, M/N, HL, d] (the rank's head columns)."""
    tpo = shape.seq_len // shape.sp
    return ref[:, :, o * tpo:(o + 1) * tpo, :].permute(0, 2, 1, 3)


def _err(got, want) -> float:
    import torch

    diff = (got.float() - want.float()).abs()
    if not bool(torch.isfinite(diff).all()):
        return math.inf
    return float(diff.max())


def check_local(out, ref) -> tuple[bool, float]:
    """(ok, max_abs_err) of a [batch, HL, M, d] output against the reference."""
    err = _err(out.to(ref.device), ref)
    return err <= ATOL, err


def check_owners(ref, bufs: OwnerBuffers, shape: FAShape, host_remote=None) -> tuple[bool, float]:
    """(ok, max_abs_err) over every owner's slice (HBM and remote) of this rank's heads.

    host_remote: the remote buffers as read on the host (e.g. the CPU alias of host memory),
    same shape as bufs.remote; default bufs.remote itself."""
    remote = bufs.remote if host_remote is None else host_remote
    lo, hi = shape.rank * shape.heads_local, (shape.rank + 1) * shape.heads_local
    worst = 0.0
    for o in range(shape.sp):
        if o == shape.rank:
            got = bufs.local
        else:
            got = remote[fa_layout.remote_slot(o, shape.rank, shape.sp)]
        want = expected_owner_slice(ref, shape, o)
        worst = max(worst, _err(got[:, :, lo:hi, :].to(want.device), want))
    return worst <= ATOL, worst


def poison(*tensors) -> None:
    """Fill bf16 buffers with NaN (0xFFFF), so a tile never written fails the check."""
    import torch

    for t in tensors:
        t.view(torch.int16).fill_(-1)
