"""One rank's Ulysses attention problem and its output tiles, as the persistent kernel runs them.

Ulysses SP = N: rank ``rank`` holds all M tokens of H/N heads; output tile (b, h, m_block) of
``block_m`` query rows belongs to owner ``m0 // (M/N)`` and, unless that owner is the rank
itself, leaves over the link as ``block_m * head_dim * 2`` bytes (bf16). Tiles are taken by
``programs`` persistent CTAs in grid-stride order; wave w is tiles ``w*K .. (w+1)*K - 1``.
Every index comes from :mod:`hwkernels.fa_layout` (pure python), so the simulator and the
kernels share one definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hwkernels import fa_layout
from xsim.closedform.fa_a2a import kv_tiles

DESTINATIONS = ("host", "peer")


@dataclass(frozen=True)
class AttentionShape:
    """Args: seq_len M, batch, heads H (all ranks), sp N, head_dim d, block_m b_m, block_n b_n,
    producers K (persistent CTAs asked for), rank (whose tiles), dtype (bf16 only)."""

    seq_len: int
    batch: int
    heads: int
    sp: int
    head_dim: int
    block_m: int = 128
    block_n: int = 128
    producers: int = 132
    rank: int = 0
    dtype: str = "bf16"

    def __post_init__(self) -> None:
        fa_layout.check_shape(self.batch, self.heads, self.seq_len, self.head_dim, self.sp, self.block_m,
                              self.dtype)
        for name in ("block_n", "producers"):
            value = getattr(self, name)
            if int(value) != value or value < 1:
                raise ValueError(f'"{name}" must be an integer >= 1, got {value!r}.')
        if not 0 <= self.rank < self.sp:
            raise ValueError(f'"rank" must be in [0, {self.sp}), got {self.rank!r}.')

    @property
    def heads_local(self) -> int:
        return self.heads // self.sp

    @property
    def n_tiles(self) -> int:
        return fa_layout.n_tiles(self.batch, self.heads_local, self.seq_len, self.block_m)

    @property
    def programs(self) -> int:
        """Persistent CTAs that run: K, or fewer when there are fewer tiles."""
        return max(1, min(self.producers, self.n_tiles))

    @property
    def kv_tiles(self) -> int:
        return kv_tiles(self.seq_len, self.block_n)

    @property
    def tile_bytes(self) -> int:
        return fa_layout.tile_bytes(self.block_m, self.head_dim)

    @property
    def waves(self) -> int:
        return -(-self.n_tiles // self.programs)

    @cached_property
    def tile_owner(self) -> np.ndarray:
        """int64[n_tiles]: the owner of every tile, in the kernel's order."""
        by_block = [fa_layout.owner_of(mb * self.block_m, self.seq_len, self.sp)
                    for mb in range(self.seq_len // self.block_m)]
        return np.array([by_block[m_block] for _, _, m_block in
                         fa_layout.tiles(self.batch, self.heads_local, self.seq_len, self.block_m)], dtype=np.int64)

    @property
    def remote_bytes(self) -> np.ndarray:
        """float64[n_tiles]: bytes each tile sends over the link (0 for the rank's own slice)."""
        return np.where(self.tile_owner != self.rank, float(self.tile_bytes), 0.0)

    def program_tiles(self, pid: int) -> np.ndarray:
        """The tiles program ``pid`` runs, in order (the kernel's grid-stride loop)."""
        return np.fromiter(fa_layout.program_tiles(pid, self.programs, self.n_tiles), dtype=np.int64)

    def wave_bytes(self) -> np.ndarray:
        """float64[waves]: remote bytes of each wave of K concurrent tiles (the aligned burst V_w)."""
        wave = np.arange(self.n_tiles) // self.programs
        return np.bincount(wave, weights=self.remote_bytes, minlength=self.waves)

    def wave_remote_tiles(self) -> np.ndarray:
        """int64[waves]: tiles of each wave that send bytes."""
        wave = np.arange(self.n_tiles) // self.programs
        return np.bincount(wave, weights=(self.remote_bytes > 0), minlength=self.waves).astype(np.int64)


def drain_peers(destination: str, sp: int) -> int:
    """Destination links one rank's remote tiles spread over: the host link (1) or N - 1 peers."""
    if destination not in DESTINATIONS:
        raise ValueError(f'"destination" must be one of {DESTINATIONS}, got {destination!r}.')
    return 1 if destination == "host" else max(sp - 1, 1)
