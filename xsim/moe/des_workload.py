"""A tile table as a DES workload (:class:`xsim.workload.Workload`).

Linear-1 tiles: ``mainloop = T_L1``, no remote bytes, signal counter ``l2_full[m]``. Linear-2
tiles: wait until ``l2_full[m]`` reaches ``l1_nblocks``, ``mainloop = T_L2``, then inject their
Combine bytes (valid remote rows x block_n2 x 2 bytes) into the GPU's X-Stage. Staging depth
S = 0 by default: the Triton kernel's epilogue stores sit on the compute role, so a tile's
mainloop starts only after the previous tile's stores have issued. ``mainloop_factor`` (one per
tile, :mod:`xsim.spread`) scales each tile's mainloop; ``prologue_us`` (the kernel's time
outside its tiles) is added to each program's first tile.

When an L1 tile's ``l2_full`` signal takes effect (``l1_release``):
- ``issue``: at its issue end (a relaxed atomic, or a warp-specialized epilogue);
- ``drain``: once every store its SM issued before has drained (a release that waits behind
  the SM's outstanding Combine stores; the compute role goes on);
- ``block``: as ``drain``, and the compute role waits for it too (the release is issued by
  the only role): two zero-time fence tiles after each L1 tile, the first signalling a
  per-SM counter at its drain end, the second waiting on it.

The L1 and L2 mainloops load their operands (``mainloop_loads``): with a platform load gate
(:mod:`xsim.load_gate`) each waits for the X-Stage's occupancy to fall to its threshold.
"""

from __future__ import annotations

import numpy as np

from xsim.moe.layout import ExpertLayout
from xsim.moe.shapes import MoEShape
from xsim.moe.tiles import KIND, L1, L2, MBLOCK, TileTable
from xsim.platform import Platform
from xsim.units import gbps_to_bytes_per_us
from xsim.workload import Workload, XStageParams

RELEASES = ("issue", "drain", "block")
KIND_NAMES = ("l1", "l2", "fence")
FENCE = 2


def mblock_remote_rows(shape: MoEShape, lay: ExpertLayout) -> np.ndarray:
    """Valid rows of each m-block whose token lives on another rank (all of them with ep = 1)."""
    valid = lay.mblock_valid_rows()
    if shape.ep == 1:
        return valid
    remote = (lay.row_token // shape.tokens) != lay.rank
    mblock_of_row = np.repeat(np.arange(lay.n_mblocks), valid)
    return np.bincount(mblock_of_row, weights=remote, minlength=lay.n_mblocks).astype(np.int64)


def tile_workload(table: TileTable, shape: MoEShape, lay: ExpertLayout, platform: Platform,
                  t_l1_us: float, t_l2_us: float, staging_depth: int = 0, l1_release: str = "drain",
                  l2_epilogue_us: float = 0.0, l1_epilogue_us: float = 0.0, prologue_us: float = 0.0,
                  mainloop_factor: np.ndarray | None = None) -> Workload:
    if l1_release not in RELEASES:
        raise ValueError(f'"l1_release" must be one of {", ".join(RELEASES)}, got {l1_release!r}')
    kind, m = table.tiles[:, KIND].astype(np.int64), table.tiles[:, MBLOCK].astype(np.int64)
    producer = table.stream_of_tile()
    combine = shape.combine_bytes(1) * mblock_remote_rows(shape, lay)
    nbytes = np.where(kind == L2, combine[m], 0).astype(float)
    factor = np.ones(len(kind)) if mainloop_factor is None else np.asarray(mainloop_factor, dtype=float)
    if factor.shape != kind.shape:
        raise ValueError(f'"mainloop_factor" must have one value per tile ({len(kind)}), got {factor.shape}')
    if l1_release == "block":
        kind, m, producer, nbytes, fence_index, factor = _with_fences(kind, m, producer, nbytes, factor)
    else:
        fence_index = np.zeros(len(kind), np.int64)
    n_streams, n_m = table.n_streams, table.n_mblocks
    k = n_streams
    t_iss0 = np.array([platform.t_iss0_us(k, b) if b > 0 else 1.0 for b in nbytes])
    first_fence, second_fence = _fence_roles(kind, producer)
    wait_counter = np.where(kind == L2, m, np.where(second_fence, n_m + producer, -1))
    wait_value = np.where(kind == L2, table.l1_nblocks, np.where(second_fence, fence_index, 0))
    signal = np.where(kind == L1, m, np.where(first_fence, n_m + producer, -1))
    on_drain = ((kind == L1) & (l1_release != "issue")) | first_fence
    offsets = np.concatenate([[0], np.cumsum(np.bincount(producer, minlength=n_streams))])
    mainloop = np.select([kind == L1, kind == L2], [t_l1_us, t_l2_us], 0.0) * factor
    firsts = offsets[:-1][np.diff(offsets) > 0]
    mainloop[firsts] += prologue_us          # the kernel's prologue, before each program's first tile
    return Workload(
        offsets=offsets.astype(np.int64), producer_gpu=np.zeros(n_streams, np.int64),
        kind=kind, kind_names=KIND_NAMES,
        mainloop_us=mainloop,
        epilogue_us=np.select([kind == L1, kind == L2], [l1_epilogue_us, l2_epilogue_us], 0.0),
        bytes=nbytes, t_iss0_us=t_iss0,
        release_us=np.zeros(len(kind)),
        wait_counter=wait_counter.astype(np.int64), wait_value=wait_value.astype(np.int64),
        signal_counter=signal.astype(np.int64), signal_on_drain=on_drain,
        n_counters=n_m + (n_streams if l1_release == "block" else 0),
        xstages=(XStageParams(gbps_to_bytes_per_us(platform.effective_drain_rate_gbps(max(1, shape.ep - 1))),
                              platform.capacity_bytes(k)),),
        staging_depth=staging_depth,
        producer_weight=np.asarray(platform.weights_for(n_streams), dtype=float),
        mainloop_loads=True, load_gate=platform.load_gate,   # GEMM mainloops load their operands
    )


def _with_fences(kind, m, producer, nbytes, factor):
    """Insert two fence tiles after every L1 tile (stream order is kept)."""
    reps = np.where(kind == L1, 3, 1)
    idx = np.repeat(np.arange(len(kind)), reps)
    pos_in_group = np.arange(len(idx)) - np.repeat(np.cumsum(reps) - reps, reps)
    new_kind = np.where(pos_in_group == 0, kind[idx], FENCE)
    new_bytes = np.where(pos_in_group == 0, nbytes[idx], 0.0)
    new_producer = producer[idx]
    first = (new_kind == FENCE) & (pos_in_group == 1)
    # the j-th first-fence of a producer (1-based) is what its j-th second fence waits for
    count = np.zeros(len(idx), np.int64)
    for p in np.unique(new_producer):
        sel = first & (new_producer == p)
        count[sel] = np.arange(1, sel.sum() + 1)
    fence_index = np.where(pos_in_group == 2, np.roll(count, 1), 0)
    return new_kind, m[idx], new_producer, new_bytes, fence_index, np.where(pos_in_group == 0, factor[idx], 1.0)


def _fence_roles(kind, producer):
    """(first fence, second fence) masks: a fence tile following an L1 tile is the first."""
    fence = kind == FENCE
    prev_l1 = np.concatenate([[False], kind[:-1] == L1])
    first = fence & prev_l1
    return first, fence & ~first
