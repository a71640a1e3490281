"""FA + post-attention A2A on N >= 2 ranks (Ulysses SP = N) over PyTorch symmetric memory.

Rank r holds q, k, v [batch, H/N, M, d] for heads r*H/N .. (r+1)*H/N - 1: the state after the
pre-attention A2A, which is not part of the experiment (the inputs are generated there, seeded
by (seed, r); rank 0's are the one-GPU runner's). Every owner o has one symmetric buffer of
``slots`` ring slots, slot s = [batch, M/N, H, d] at s * slice bytes (launch i of a replay
writes slot i % slots, as on one GPU).

- Stores: an output tile whose rows belong to owner o != r (fa_layout.owner_of) goes straight
  to o's buffer, ``dest.remote(o)``, at fa_layout.dest_offset (NVLink): the kernels' DELTA
  path, owner o's buffer delta[o] elements from one base pointer. The own slice (o == r) is
  stored into the rank's own symmetric buffer (local HBM), the one the other ranks write their
  heads of its tokens into, so the owner's [batch, M/N, H, d] ends complete in one place.
- Variants: every one of fa_variants.VARIANTS, unchanged: a2a-store and serial through our
  store kernel, a2a-ce as device-to-device 2-D copies into the peer buffers (the copy engine
  over the mapped peer addresses), cc fenced at system scope (which covers the peers).
- Check (receiver side): after a barrier, owner o compares every ring slot of its own buffer,
  all H heads, with the float32 torch SDPA reference slices each source rank computed for its
  heads and sent by NCCL ``all_to_all_single``, a path independent of the kernels' stores.
- Timing: a barrier before every run (every owner has poisoned its buffer) and after it (all
  stores visible); a trial's time is the maximum over ranks (hwkernels.ranks.pool), per-tile
  distributions pool every rank's tiles; the replay count is agreed (the maximum estimate).
Never run on GPUs so far: tested on the CPU with gloo ranks (tests/test_hwkernels_fa_dist.py).
"""

from __future__ import annotations

from .fa_variants import REMOTE_VARIANTS, Case

RANK_SEED_STRIDE = 7919


def rank_seed(seed: int, rank: int) -> int:
    """The input seed of rank ``rank`` (rank 0: ``seed``, the one-GPU runner's inputs)."""
    return seed + RANK_SEED_STRIDE * rank


def world_problem(target: str, world: int) -> str:
    """Why ``target`` cannot run with ``world`` processes ('' if it can)."""
    from .destination import DestinationError, check_kind

    if target == "host" and world > 1:
        return ("--target host runs one process (rank 0 of N virtual owners on one GPU); "
                "use --target peer for N > 1")
    try:
        check_kind(target, world)
    except DestinationError as e:
        return str(e)
    return ""


def ring_bytes(shape, slots: int) -> int:
    """Bytes of one owner's symmetric buffer: ``slots`` slices [batch, M/N, H, d] bf16."""
    return slots * shape.slice_elems * 2


def assemble_owner(recv):
    """[N (source rank), batch, M/N, H/N, d] -> [batch, M/N, H, d]: source s's head h is
    global head s*H/N + h (fa_layout.dest_offset's column)."""
    n, b, t, hl, d = recv.shape
    return recv.permute(1, 2, 0, 3, 4).reshape(b, t, n * hl, d)


def expected_receive(ref, shape, ranks):
    """What owner ``shape.rank`` must receive, [batch, M/N, H, d] float32: every rank's
    reference slice for this owner, moved by NCCL (gloo in the CPU tests)."""
    import torch

    from .fa import expected_owner_slice

    send = torch.stack([expected_owner_slice(ref, shape, o) for o in range(shape.sp)])
    send = send.contiguous()
    recv = torch.empty_like(send)
    ranks.all_to_all(recv, send, [1] * shape.sp, [1] * shape.sp)
    return assemble_owner(recv)


def peer_buffers(shape, dest, slots: int) -> list:
    """One fa.OwnerBuffers per ring slot over every owner's symmetric buffer (see module doc)."""
    import torch

    from .fa import OwnerBuffers

    n = shape.slice_elems * 2
    out = []
    for s in range(slots):
        owners = tuple(dest.remote(o)[s * n:(s + 1) * n].view(torch.bfloat16)
                       .view(shape.owner_shape) for o in range(shape.sp))
        base = owners[(shape.rank + 1) % shape.sp]
        deltas = [o.data_ptr() - base.data_ptr() for o in owners]
        if any(d % 16 for d in deltas):
            raise ValueError("owner buffers must be 16-byte aligned relative to each other")
        delta = torch.tensor([d // 2 for d in deltas], dtype=torch.int64,
                             device=owners[shape.rank].device)
        out.append(OwnerBuffers(owners[shape.rank], base, delta, owners))
    return out


class PeerCase(Case):
    """fa_variants.Case on rank ``shape.rank`` of N: the owners' buffers are the peers'."""

    def __init__(self, shape, cfg, dest, slots: int, programs: int, ranks, seed: int = 0):
        bufs = peer_buffers(shape, dest, slots)
        super().__init__(shape, cfg, None, slots, programs, rank_seed(seed, shape.rank),
                         bufs=bufs, device=bufs[0].local.device)
        self.ranks = ranks
        self.expected = expected_receive(self.ref, shape, ranks)

    def poison(self, variant: str) -> None:
        """This rank's output and, for remote variants, its own receive buffer (every slot);
        the other owners poison theirs (the barrier after poisoning is the harness's)."""
        from .fa import poison

        poison(self.out)
        if self.sdpa_out is not None:
            poison(self.sdpa_out)
        if variant in REMOTE_VARIANTS:
            for b in self.bufs:
                poison(b.local)

    def check(self, variant: str) -> tuple[bool, float]:
        """Receiver side: every slot of this owner's buffer against what it must receive."""
        from .fa import ATOL, _err

        if variant not in REMOTE_VARIANTS:
            return super().check(variant)
        worst = max(_err(b.local, self.expected) for b in self.bufs)
        return worst <= ATOL, worst


def join(shapes_: list, slots_of):
    """Join the torchrun job: (Ranks, a peer destination for every shape's ring)."""
    from . import destination, symm
    from .ranks import Ranks

    d = symm.init()
    nbytes = max(ring_bytes(s, slots_of(s)) for s in shapes_)
    return Ranks(d), destination.make("peer", nbytes, d)
