"""The collectives the N-rank runners need, behind one small interface.

    ranks = Ranks(dist)      # N >= 2 ranks (NCCL on GPUs; gloo in the CPU tests)
    ranks = SOLO             # one GPU: every method is the identity, nothing is exchanged

- ``sync()``: a barrier (all ranks here, their queued GPU work done): before a launch (every
  owner has poisoned its buffer) and after it (every remote store visible to its receiver).
- ``agree(ok, err)``: every rank's check AND-ed, errors MAX-ed (harness.measure's ``agree``).
- ``max_of(x)``: the maximum over ranks of a number (a per-trial kernel time).
- ``pool(samples)``: one trial's ``{name: number | array}`` of every rank: ``kernel_us`` (the
  trial's time) becomes its maximum over ranks, every other sample is concatenated in rank
  order (per-tile distributions over every rank's tiles). An exception passed in by any rank
  is raised on every rank, so all of them leave the trial together instead of waiting.
- ``all_to_all(out, inp, out_counts, in_counts)``: ``all_to_all_single`` on dim 0.
"""

from __future__ import annotations

import numpy as np

from . import symm


class RankError(RuntimeError):
    """Another rank (or this one) failed inside a collective step."""


class Solo:
    """One process: no collectives."""

    rank, world = 0, 1

    def sync(self) -> None:
        return None

    def agree(self, ok: bool, err: float) -> tuple[bool, float]:
        return ok, err

    def max_of(self, value: float) -> float:
        return value

    def pool(self, samples):
        if isinstance(samples, BaseException):
            raise samples
        return samples


SOLO = Solo()


class Ranks(Solo):
    """This process's collectives in a job of ``dist.world`` ranks (``symm.Dist``)."""

    def __init__(self, dist):
        self.rank, self.world, self.device = dist.rank, dist.world, dist.device

    def sync(self) -> None:
        symm.barrier(self.device)

    def agree(self, ok: bool, err: float) -> tuple[bool, float]:
        return symm.all_ok(ok, err, self.device)

    def max_of(self, value: float) -> float:
        import torch
        import torch.distributed as dist

        t = torch.tensor([float(value)], dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    def gather(self, obj) -> list:
        import torch.distributed as dist

        box = [None] * self.world
        dist.all_gather_object(box, obj)
        return box

    def pool(self, samples):
        every = self.gather(samples)
        for r, s in enumerate(every):
            if isinstance(s, BaseException):
                raise RankError(f"rank {r}: {type(s).__name__}: {s}")
        return pool_samples(every)

    def all_to_all(self, out, inp, out_counts, in_counts) -> None:
        import torch.distributed as dist

        dist.all_to_all_single(out, inp, [int(c) for c in out_counts],
                               [int(c) for c in in_counts])


def pool_samples(every: list[dict], maxed=("kernel_us",)) -> dict:
    """Combine one trial's samples of every rank (see the module doc): pure, no collectives;
    ``maxed``: the names whose maximum over ranks is kept (numbers)."""
    if not every:
        raise ValueError('"every" must hold one dict per rank.')
    names = set(every[0])
    if any(set(s) != names for s in every):
        raise ValueError("every rank must report the same sample names")
    out = {}
    for name in every[0]:
        vals = [s[name] for s in every]
        if name in maxed:
            out[name] = max(float(v) for v in vals)
        else:
            out[name] = np.concatenate([np.atleast_1d(np.asarray(v, dtype=np.float64))
                                        for v in vals])
    return out
