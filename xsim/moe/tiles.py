"""The tile table both schedules emit and the fused kernel executes, and its safety check.

``offsets`` int32[n_streams + 1]: stream s runs tiles ``offsets[s]:offsets[s+1]`` in order.
``tiles`` int32[n_tiles, 4]: (kind, expert, mblock, nblock); kind 0 = Linear-1, 1 = Linear-2.
An L2 tile of m-block m waits until counter ``l2_full[m]`` reaches ``l1_nblocks`` (every L1
tile of m-block m has finished).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

L1, L2 = 0, 1
KIND, EXPERT, MBLOCK, NBLOCK = range(4)


@dataclass(frozen=True, eq=False)
class TileTable:
    offsets: np.ndarray   # int32[n_streams + 1]
    tiles: np.ndarray     # int32[n_tiles, 4]
    l1_nblocks: int
    l2_nblocks: int
    n_mblocks: int
    schedule: str = ""
    lead: float = 0.0

    @property
    def n_streams(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_tiles(self) -> int:
        return int(self.offsets[-1])

    def stream(self, s: int) -> np.ndarray:
        return self.tiles[self.offsets[s]:self.offsets[s + 1]]

    def stream_of_tile(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_streams), np.diff(self.offsets))

    def validate(self) -> None:
        """Raise ValueError unless every tile is present once and the streams cannot deadlock."""
        self._check_arrays()
        self._check_exactly_once()
        self._check_progress()

    def _check_arrays(self) -> None:
        if self.tiles.ndim != 2 or self.tiles.shape[1] != 4:
            raise ValueError(f"tile table: tiles must be [n_tiles, 4], got shape {self.tiles.shape}")
        if self.offsets[0] != 0 or np.any(np.diff(self.offsets) < 0) or self.offsets[-1] != len(self.tiles):
            raise ValueError("tile table: offsets must rise from 0 to n_tiles")
        kind = self.tiles[:, KIND]
        if np.any((kind != L1) & (kind != L2)):
            raise ValueError("tile table: tile kind must be 0 (Linear-1) or 1 (Linear-2)")

    def _check_exactly_once(self) -> None:
        kind, m, n = self.tiles[:, KIND], self.tiles[:, MBLOCK], self.tiles[:, NBLOCK]
        for k, nb, name in ((L1, self.l1_nblocks, "Linear-1"), (L2, self.l2_nblocks, "Linear-2")):
            sel = kind == k
            if np.any((m[sel] < 0) | (m[sel] >= self.n_mblocks) | (n[sel] < 0) | (n[sel] >= nb)):
                raise ValueError(f"tile table: a {name} tile names an m-block or n-block out of range")
            count = np.bincount(m[sel] * nb + n[sel], minlength=self.n_mblocks * nb)
            if np.any(count != 1):
                bad = int(np.nonzero(count != 1)[0][0])
                raise ValueError(f"tile table: {name} tile (m-block {bad // nb}, n-block {bad % nb}) "
                                 f"appears {int(count[bad])} times, expected exactly once")
        expert = np.full(self.n_mblocks, -1)
        expert[m] = self.tiles[:, EXPERT]
        if np.any(expert[m] != self.tiles[:, EXPERT]):
            raise ValueError("tile table: tiles of one m-block name different experts")

    def _check_progress(self) -> None:
        """Run every stream with unbounded progress; a stream left waiting is a deadlock."""
        stuck = run_streams(self)
        if stuck is None:
            return
        s, m, at = stuck
        later = self.tiles[at:self.offsets[s + 1]]
        if np.any((later[:, KIND] == L1) & (later[:, MBLOCK] == m)):
            raise ValueError(f"tile table has a dependency cycle: stream {s} runs a Linear-2 tile of "
                             f"m-block {m} before its own Linear-1 tile of that m-block")
        raise ValueError(f"tile table is not safe for co-resident streams: stream {s} waits forever "
                         f"on m-block {m} (its Linear-1 tiles sit behind other blocked streams)")


def run_streams(table: TileTable) -> tuple[int, int, int] | None:
    """Advance every stream as far as dependencies allow (unbounded progress, event-driven).

    Returns None when every stream finishes, else (stream, m-block it waits on, tile index).
    """
    kind, m = table.tiles[:, KIND], table.tiles[:, MBLOCK]
    pos = table.offsets[:-1].astype(np.int64).copy()
    end = table.offsets[1:]
    done = np.zeros(table.n_mblocks, dtype=np.int64)
    waiting: dict[int, list[int]] = {}
    ready = deque(range(table.n_streams))
    need = table.l1_nblocks
    while ready:
        s = ready.popleft()
        i = pos[s]
        while i < end[s]:
            mb = int(m[i])
            if kind[i] == L1:
                done[mb] += 1
                if done[mb] == need:
                    ready.extend(waiting.pop(mb, ()))
            elif done[mb] < need:
                waiting.setdefault(mb, []).append(s)
                break
            i += 1
        pos[s] = i
    left = np.nonzero(pos < end)[0]
    if left.size == 0:
        return None
    s = int(left[0])
    return s, int(m[pos[s]]), int(pos[s])
