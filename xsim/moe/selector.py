"""The schedule selector: predicted stall reduction against a locality cost (beyond the paper).

The paper found interleaving can lose the L2-cache locality of expert weights (0.94x on some
balanced configs) and proposed a generator that picks the schedule; this is it. For each
config both schedules are simulated; the gain of interleaving is the predicted kernel-time
reduction ``T_wave - T_int`` (the stall it removes). Its locality cost is the extra weight
traffic from HBM: each tile reads one weight slice (an L1 tile ``hidden x 2 block_n1`` of its
expert's w1, an L2 tile ``intermediate x block_n2`` of w2); replaying the tiles in the order
their mainloops start (from the DES) through an LRU cache of the GPU's L2 size, a slice read
again after more than L2 bytes of other slices misses. The cost of a schedule is its
non-compulsory miss bytes over the HBM bandwidth; interleaving is picked iff its gain exceeds
its extra cost. The working set each schedule keeps in flight is reported beside it: the
weight bytes of the distinct slices whose tiles run at the same time (median over the run).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from xsim.moe.des_workload import FENCE
from xsim.moe.shapes import MoEShape

# brief: 60 MB of an H200; 50 MB of an H100 (PyTorch's reading on the lent machine); B200-class assumed 126 MB
L2_CACHE_BYTES = {"h200": 60e6, "h100": 50e6, "b200": 126e6}


@dataclass(frozen=True)
class Locality:
    miss_bytes: float           # non-compulsory weight misses (bytes)
    reread_bytes: float         # every weight read after the first of its slice
    working_set_bytes: float    # median weight bytes of the slices running at the same time
    cost_us: float              # miss_bytes / HBM bandwidth


@dataclass(frozen=True)
class Pick:
    schedule: str               # "wave" or "interleaved"
    gain_us: float              # T_wave - T_int from the DES
    locality_cost_us: float     # extra HBM time of interleaving: cost_int - cost_wave
    wave: Locality
    interleaved: Locality

    def to_dict(self) -> dict:
        return asdict(self)


def slice_ids(shape: MoEShape, kind: np.ndarray, expert: np.ndarray, nblock: np.ndarray) -> np.ndarray:
    width = max(shape.l1_nblocks, shape.l2_nblocks)
    return (expert.astype(np.int64) * 2 + kind) * width + nblock


def slice_bytes(shape: MoEShape, kind: np.ndarray) -> np.ndarray:
    return np.where(kind == 0, shape.l1_tile_weight_bytes(), shape.l2_tile_weight_bytes()).astype(float)


def lru_misses(ids: np.ndarray, nbytes: np.ndarray, capacity_bytes: float) -> tuple[float, float]:
    """(non-compulsory miss bytes, re-read bytes) of accesses in order through a byte-LRU.

    Reuse distance by a Fenwick tree over access positions holding each slice's bytes at its
    latest access: a re-access misses when the distinct bytes touched since, plus its own,
    exceed the capacity.
    """
    n = len(ids)
    tree = [0.0] * (n + 1)            # plain lists: scalar indexing of numpy arrays is ~5x slower
    last: dict[int, int] = {}
    miss = reread = 0.0
    for i, (s, b) in enumerate(zip(ids.tolist(), nbytes.tolist())):
        p = last.get(s)
        if p is not None:
            reread += b
            between, j = 0.0, i           # sum over positions p+1 .. i-1 = prefix(i) - prefix(p + 1)
            while j > 0:
                between += tree[j]
                j -= j & -j
            j = p + 1
            while j > 0:
                between -= tree[j]
                j -= j & -j
            if between + b > capacity_bytes:
                miss += b
            j = p + 1
            while j <= n:
                tree[j] -= b
                j += j & -j
        j = i + 1
        while j <= n:
            tree[j] += b
            j += j & -j
        last[s] = i
    return miss, reread


def working_set_bytes(ids, nbytes, start, end, samples: int = 200) -> float:
    if len(start) == 0:
        return 0.0
    times = np.linspace(start.min(), end.max(), samples + 2)[1:-1]
    sizes = []
    for t in times:
        run = (start <= t) & (end > t)
        _, first = np.unique(ids[run], return_index=True)
        sizes.append(nbytes[run][first].sum())
    return float(np.median(sizes))


def locality(shape: MoEShape, table_tiles: np.ndarray, result, capacity_bytes: float, hbm_tbps: float) -> Locality:
    """A schedule's weight locality from its tile table and its DES result (same tile order)."""
    w, t = result.workload, result.times
    real = w.kind != FENCE
    start, end = t.mainloop_start[real], t.mainloop_end[real]
    kind, expert, nblock = table_tiles[:, 0], table_tiles[:, 1], table_tiles[:, 3]
    ids, nbytes = slice_ids(shape, kind, expert, nblock), slice_bytes(shape, kind)
    order = np.argsort(start, kind="stable")
    miss, reread = lru_misses(ids[order], nbytes[order], capacity_bytes)
    return Locality(miss, reread, working_set_bytes(ids, nbytes, start, end), miss / (hbm_tbps * 1e6))


def pick(t_wave_us: float, t_int_us: float, wave: Locality, interleaved: Locality) -> Pick:
    gain, cost = t_wave_us - t_int_us, interleaved.cost_us - wave.cost_us
    return Pick("interleaved" if gain > cost else "wave", gain, cost, wave, interleaved)
