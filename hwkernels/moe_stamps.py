"""The fused MoE kernel's per-tile stamps as times (pure numpy; no GPU needed).

Six ``%globaltimer`` stamps per tile, each after a ``bar.sync`` (``moe_kernels``): tile start,
mainloop start (= the end of the ``l2_full`` wait), mainloop end, first epilogue store, every
warp's stores issued, tile end (after L1's release). Between one tile's end and the next
tile's start on the same program lies the per-tile bookkeeping (``gap_us``); between the
CUDA events and the first and last stamps, the launch, the prologue and the exit.
"""

from dataclasses import dataclass

import numpy as np

STAMP_COLS = 6


@dataclass(frozen=True)
class TileTimes:
    """Per-tile times (microseconds) from one run's stamps; kind 0 = L1, 1 = L2."""

    kind: np.ndarray
    wait_us: np.ndarray       # tile start -> mainloop start (L2: the l2_full wait)
    mainloop_us: np.ndarray   # mainloop start -> end
    epilogue_us: np.ndarray   # mainloop end -> first store (L1: SwiGLU; both: the cast)
    store_us: np.ndarray      # epilogue store span (L2: the Combine span T_RS)
    signal_us: np.ndarray     # store end -> tile end (L1: the release of l2_full)
    start_us: np.ndarray      # tile start relative to the run's first tile start
    gap_us: np.ndarray        # previous tile's end -> this tile's start on the same program
                              # (the per-tile bookkeeping; NaN for a program's first tile)
    tiles_span_us: float      # first tile start -> last tile end over every program

    def of(self, kind: int, name: str) -> np.ndarray:
        values = getattr(self, name)[self.kind == kind]
        return values[~np.isnan(values)] if name == "gap_us" else values


def tile_times(stamps: np.ndarray, tiles: np.ndarray, offsets=None) -> TileTimes:
    """stamps int64 [n, 6] (%globaltimer ns, columns as in moe_kernels); tiles int32 [n, 4];
    offsets: the table's stream offsets (tiles offsets[s]:offsets[s+1] ran on program s, in
    order), for ``gap_us`` (all NaN without them)."""
    st = np.asarray(stamps, dtype=np.int64)
    if st.ndim != 2 or st.shape[1] != STAMP_COLS or st.shape[0] != len(tiles):
        raise ValueError(f'"stamps" must have shape [{len(tiles)}, {STAMP_COLS}].')
    d = np.diff(st, axis=1)
    if np.any(d < 0):
        raise ValueError("tile stamps are not increasing")
    us = d.astype(np.float64) / 1e3
    gap = np.full(len(st), np.nan)
    if offsets is not None and len(st):
        first = np.zeros(len(st), bool)
        first[np.asarray(offsets)[:-1][np.diff(offsets) > 0]] = True
        gap[1:] = (st[1:, 0] - st[:-1, -1]) / 1e3
        gap[first] = np.nan
        if np.any(gap[~first] < 0):
            raise ValueError("a tile started before the previous tile of its program ended")
    span = float(st[:, -1].max() - st[:, 0].min()) / 1e3 if len(st) else 0.0
    return TileTimes(kind=np.asarray(tiles)[:, 0].copy(), wait_us=us[:, 0],
                     mainloop_us=us[:, 1], epilogue_us=us[:, 2], store_us=us[:, 3],
                     signal_us=us[:, 4], start_us=(st[:, 0] - st[:, 0].min()).astype(np.float64) / 1e3,
                     gap_us=gap, tiles_span_us=span)


# A fused-local mainloop record's statistics (per tile kind) and the samples they come from
FUSED_RECORD_STATS = {
    "l1": {"mainloop_us": "l1_mainloop_us", "wait_us": "l1_wait_us", "store_us": "l1_store_us",
           "signal_us": "signal_us", "epilogue_us": "l1_epilogue_us", "gap_us": "l1_gap_us",
           "kernel_outside_us": "outside_us"},   # per kernel, once (in the L1 record)
    "l2": {"mainloop_us": "l2_mainloop_us", "store_us": "span_us",
           "dep_wait_us": "wait_us",              # an L2 wait includes its dependency
           "epilogue_us": "l2_epilogue_us", "gap_us": "l2_gap_us"}}


def run_times(fused, stamps=None) -> TileTimes:
    """One stamped run of the fused kernel (``moe.FusedMoE``) as tile times (``stamps``: its
    ``stamp_array()``, when the caller already copied it off the GPU)."""
    st = fused.stamp_array() if stamps is None else stamps
    return tile_times(st, fused.tiles.cpu().numpy(), fused.offsets.cpu().numpy())


def kernel_samples(fused, kernel_us: float, t: TileTimes | None = None) -> dict:
    """One stamped run of the fused kernel (``moe.FusedMoE``) as the runner's named samples: the
    kernel time, the Combine spans (= the eq. 15 stalls at S = 0), each kind's waits, mainloops,
    epilogues and gaps, L1's store and release, the time outside every tile, and (on the GPU)
    the launch's own mean SM clock (the kernel's CLK sums). ``t``: the run's :func:`run_times`,
    when the caller has them."""
    t = run_times(fused) if t is None else t
    span = t.of(1, "store_us")
    return {"kernel_us": kernel_us, "span_us": span, "stall_us": span,
            "wait_us": t.of(1, "wait_us"), "signal_us": t.of(0, "signal_us"),
            "l1_mainloop_us": t.of(0, "mainloop_us"), "l2_mainloop_us": t.of(1, "mainloop_us"),
            "l1_wait_us": t.of(0, "wait_us"), "l1_store_us": t.of(0, "store_us"),
            "l1_epilogue_us": t.of(0, "epilogue_us"), "l2_epilogue_us": t.of(1, "epilogue_us"),
            "l1_gap_us": t.of(0, "gap_us"), "l2_gap_us": t.of(1, "gap_us"),
            "outside_us": kernel_us - t.tiles_span_us,
            **({"run_clock_mhz": mhz} if (mhz := fused.run_clock_mhz()) is not None else {})}
