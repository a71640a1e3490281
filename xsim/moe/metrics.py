"""What a MoE simulation predicts per tile: Linear-2 spans, stalls before mainloops, eq. 15.

- ``span_us``: each Linear-2 tile's sender-visible remote-store span (issue end - issue start,
  the epilogue included), T_RS.
- ``stall_us``: each compute tile's wait before its mainloop. With staging depth S <= 1 the
  compute role issues its own stores, so it is the time from the previous tile's issue end
  (the role free again) to this mainloop's start: the ``l2_full`` spin and, with
  ``l1_release = block``, the release's wait. With S >= 2 it is the wait for a staging slot
  after the dependencies were met (the paper's tmem_empty wait, Sec. 5.2.3).
- ``eq15_stall_us``: per Linear-2 tile, [T_RS - T_cover]+ with T_cover the mainloop of the
  tile that follows it in its stream when S >= 2, and 0 when the span is not covered (S <= 1).
"""

from __future__ import annotations

import numpy as np

from xsim.moe.des_workload import FENCE
from xsim.moe.tiles import L1, L2
from xsim.stats import Stats


def per_tile(result) -> dict[str, np.ndarray]:
    w, t = result.workload, result.times
    real = w.kind != FENCE
    producer = w.producer
    span = (t.issue_end - t.issue_start)[w.kind == L2]
    if w.staging_depth <= 1:
        stall = _wait_after_previous(w.offsets, real, t.mainloop_start, t.issue_end)
    else:
        stall = t.stall_us
    nxt = _next_real(w.offsets, real)
    cover = np.where(nxt >= 0, w.mainloop_us[np.maximum(nxt, 0)], 0.0) if w.staging_depth >= 2 \
        else np.zeros(w.n_tiles)
    eq15 = np.maximum((t.issue_end - t.issue_start) - cover, 0.0)[w.kind == L2]
    return {"span_us": span, "stall_us": stall[real], "eq15_stall_us": eq15,
            "stall_l1_us": stall[w.kind == L1], "stall_l2_us": stall[w.kind == L2],
            "producer": producer}


def _wait_after_previous(offsets, real, start, issue_end):
    wait = np.zeros(len(start))
    for p in range(len(offsets) - 1):
        free = 0.0
        for i in range(offsets[p], offsets[p + 1]):
            if real[i]:
                wait[i] = start[i] - free
                free = issue_end[i]
    return wait


def _next_real(offsets, real):
    nxt = np.full(len(real), -1, dtype=np.int64)
    for p in range(len(offsets) - 1):
        following = -1
        for i in range(offsets[p + 1] - 1, offsets[p] - 1, -1):
            nxt[i] = following
            if real[i]:
                following = i
    return nxt


def summarize(result, kernel_overhead_us: float = 0.0) -> dict:
    tiles = per_tile(result)
    return {
        "kernel_us": result.makespan_us + kernel_overhead_us,
        "span_us": Stats.of(tiles["span_us"]).to_dict(),
        "stall_us": Stats.of(tiles["stall_us"]).to_dict(),
        "stall_l2_us": Stats.of(tiles["stall_l2_us"]).to_dict(),
        "eq15_stall_us": Stats.of(tiles["eq15_stall_us"]).to_dict(),
        "remote_bytes": float(result.workload.bytes.sum()),
    }
