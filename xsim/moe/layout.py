"""The rows one rank computes, grouped by local expert (the contract's ``expert_layout``).

Rows are the (token, slot) pairs routed to the rank's local experts ``rank * E_local ...``,
sorted by local expert, then token. Expert ``e`` owns rows ``expert_rows[e]:expert_rows[e+1]``
(exact, not padded) and m-blocks ``expert_mblock[e]:expert_mblock[e+1]`` (ceil(rows / block_m)
of them; the last may be partial and kernels mask rows >= the expert's end). M-blocks are
numbered globally on the rank: that global index is a tile's ``mblock`` and its ``l2_full``
counter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xsim.moe.routing import Routing
from xsim.moe.shapes import MoEShape


@dataclass(frozen=True, eq=False)
class ExpertLayout:
    row_token: np.ndarray      # int32[R]
    row_slot: np.ndarray       # int32[R]
    row_weight: np.ndarray     # float32[R]
    expert_rows: np.ndarray    # int32[E_local + 1]
    expert_mblock: np.ndarray  # int32[E_local + 1]
    block_m: int
    rank: int

    @property
    def n_rows(self) -> int:
        return int(self.expert_rows[-1])

    @property
    def n_mblocks(self) -> int:
        return int(self.expert_mblock[-1])

    @property
    def rows_per_expert(self) -> np.ndarray:
        return np.diff(self.expert_rows)

    def mblock_expert(self) -> np.ndarray:
        """int32[M]: the local expert of every global m-block."""
        return np.repeat(np.arange(len(self.expert_mblock) - 1, dtype=np.int32),
                         np.diff(self.expert_mblock))

    def mblock_valid_rows(self) -> np.ndarray:
        """int64[M]: valid rows of every m-block (block_m, except an expert's last)."""
        e = self.mblock_expert()
        local = np.arange(self.n_mblocks) - self.expert_mblock[e]
        remaining = self.expert_rows[e + 1] - self.expert_rows[e] - local * self.block_m
        return np.minimum(remaining, self.block_m).astype(np.int64)


def expert_layout(shape: MoEShape, routing: Routing, rank: int = 0) -> ExpertLayout:
    if not 0 <= rank < shape.ep:
        raise ValueError(f'"rank" must be in [0, {shape.ep}), got {rank!r}')
    ids = routing.topk_ids
    if ids.shape != (shape.tokens * shape.ep, shape.topk):
        raise ValueError(f"routing has shape {ids.shape}, expected {(shape.tokens * shape.ep, shape.topk)}")
    e_local = shape.experts_local
    local = ids.astype(np.int64) - rank * e_local
    token, slot = np.nonzero((local >= 0) & (local < e_local))
    expert = local[token, slot]
    order = np.lexsort((token, expert))          # by expert, then token
    token, slot, expert = token[order], slot[order], expert[order]
    counts = np.bincount(expert, minlength=e_local)
    mblocks = -(-counts // shape.block_m)
    return ExpertLayout(
        row_token=token.astype(np.int32), row_slot=slot.astype(np.int32),
        row_weight=routing.topk_weights[token, slot].astype(np.float32),
        expert_rows=np.concatenate([[0], np.cumsum(counts)]).astype(np.int32),
        expert_mblock=np.concatenate([[0], np.cumsum(mblocks)]).astype(np.int32),
        block_m=shape.block_m, rank=rank,
    )
