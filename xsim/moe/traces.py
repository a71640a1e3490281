"""The fused MoE kernel's own traces against the DES: the X-Stage rebuilt from the stamps, and the same numbers
from a simulated run of the very table (pure numpy; the traces come from ``hwkernels.moe_bench --traces`` or
``hwkernels.moe_beside --traces``).

A traces file holds, per point ``config|label``: ``|host|stamps`` and/or ``|local|stamps`` (int [n, 6], ns:
tile start, mainloop start, mainloop end, first store, stores issued, tile end), ``|tiles`` (the table's rows:
kind, expert, m-block, n-block), ``|offsets`` (its program boundaries) and ``|store_bytes`` (each tile's Combine
bytes). The rebuilt X-Stage: each tile's bytes enter evenly over its store span (stamps 3 to 4) and drain at the
profile's R whenever any are held, a fluid queue on a 100 ns grid. Nothing here is fitted: a trace is a
validation run's, never a calibration input.
"""

from __future__ import annotations

import numpy as np

from xsim.moe.trace_pack import unpacked

DT_NS = 100.0


def merged(files) -> dict:
    """Every array of every traces file by key, packed ones unpacked (:mod:`xsim.moe.trace_pack`; a host run and
    its local control may be in two files: ``hwkernels.moe_bench --traces`` writes one per destination; a table's
    arrays are the same in both)."""
    return unpacked({k: f[k] for f in files for k in f.files if k != "commit"})


def host_points(arrays: dict) -> list[str]:
    """The ``config|label`` keys with a host run, sorted."""
    return sorted(k.rsplit("|", 2)[0] for k in arrays if k.endswith("|host|stamps"))


def link_queue(stamps: np.ndarray, store_bytes: np.ndarray, rate_gbps: float, dt_ns: float = DT_NS):
    """(held, drained, t0): per dt_ns bin from t0, the bytes the fluid X-Stage holds at the bin's end and the
    bytes it drained in the bin (at most R x dt_ns); the grid runs past the last store until everything stored
    has drained."""
    s3, s4 = stamps[:, 3].astype(float), stamps[:, 4].astype(float)
    store = store_bytes > 0
    t0 = float(min(stamps[:, 0].min(), s3[store].min() if store.any() else 0.0))
    cap = rate_gbps * dt_ns                                      # GB/s = bytes/ns
    n = int(np.ceil((max(stamps[:, 5].max(), s4.max()) - t0) / dt_ns + store_bytes.sum() / cap)) + 2
    inflow = np.zeros(n)
    for a, b, nbytes in zip((s3[store] - t0) / dt_ns, (s4[store] - t0) / dt_ns, store_bytes[store]):
        lo, hi = int(a), max(int(np.ceil(b)), int(a) + 1)     # spread evenly over the bins it spans
        inflow[lo:hi] += nbytes / (hi - lo)
    held, drained, q = np.zeros(n), np.zeros(n), 0.0
    for i in range(n):
        q += inflow[i]
        drained[i] = min(q, cap)
        q -= drained[i]
        held[i] = q
    return held, drained, t0


def running(start: np.ndarray, end: np.ndarray, n: int, dt: float) -> np.ndarray:
    """How many of the [start, end) intervals (in the bins' unit, from the grid's start) cover each of n bins
    of width dt."""
    c = np.zeros(n + 1)
    np.add.at(c, np.clip((start / dt).astype(int), 0, n), 1)
    np.add.at(c, np.clip((end / dt).astype(int), 0, n), -1)
    return np.cumsum(c)[:n]


def shares(q: np.ndarray, idle: np.ndarray, gate: float, l2_running: np.ndarray) -> dict:
    """Per bin of a span: the X-Stage's bytes, whether the link is idle, the L2 mainloops running."""
    return {"q_mean": float(q.mean()), "above": float(np.mean(q > gate)), "q_max": float(q.max()),
            "idle": float(idle.mean()), "l2_idle": float(l2_running[idle].mean()) if idle.any() else float("nan")}


def rebuilt(stamps: np.ndarray, store_bytes: np.ndarray, rate: float, gate: float,
            kind: np.ndarray | None = None) -> dict:
    """A host run's X-Stage over its span (first tile start to last tile end): span_us, q_mean, above (share
    with more than ``gate`` bytes), q_max (the drain after the span included), idle (share of 100 ns bins
    draining under half of R), l2_idle (L2 mainloops running while it idles); ``kind`` 1 marks L2 tiles
    (default: the tiles that store)."""
    held, drained, t0 = link_queue(stamps, store_bytes, rate)
    span_ns = float(stamps[:, 5].max() - stamps[:, 0].min())
    n = int(np.ceil(span_ns / DT_NS))
    l2 = (store_bytes > 0) if kind is None else (kind == 1)
    run = running((stamps[l2, 1] - t0) / 1e3, (stamps[l2, 2] - t0) / 1e3, n, DT_NS / 1e3)
    return {"span_us": span_ns / 1e3} | shares(held[:n], drained[:n] < 0.5 * rate * DT_NS, gate, run) \
        | {"q_max": float(held.max())}


def simulated(result, gate: float, l2: np.ndarray) -> dict:
    """The same numbers from a DES result with its q(t) trace, on the same grid: q linear between breakpoints,
    the link idle where q is empty (the DES drains at R whenever it holds bytes), an L2 mainloop running from
    its start to its end (pauses at a stall gate included)."""
    t, q = (np.asarray(a, dtype=float) for a in result.traces[0][:2])
    span = float(result.makespan_us)
    dt = DT_NS / 1e3
    grid = (np.arange(int(np.ceil(span / dt))) + 0.5) * dt
    qg = np.interp(grid, t, q)
    tt = result.times
    run = running(tt.mainloop_start[l2], tt.mainloop_end[l2], len(grid), dt)
    return {"span_us": span} | shares(qg, qg <= 1.0, gate, run)


def waits(stamps: np.ndarray, tiles: np.ndarray) -> tuple:
    """(L1 tiles' start -> mainloop start, L2 tiles' wait after their m-block's last L1 tile ended, L2 tiles'
    wait for that last L1 tile), us: the small loads before an L1 mainloop (next tile's indices, error flag, row
    tokens), an L2 tile's l2_full poll once its dependency is met, and its dependency wait."""
    st = stamps.astype(float) / 1e3
    l1, l2, mb = tiles[:, 0] == 0, tiles[:, 0] == 1, tiles[:, 2]
    last = np.full(int(mb.max()) + 1, -np.inf)
    np.maximum.at(last, mb[l1], st[l1, 5])
    s0, s1 = st[l2, 0], st[l2, 1]
    met = np.clip(last[mb[l2]], s0, s1)
    return st[l1, 1] - st[l1, 0], s1 - met, met - s0


def occupancy_series(stamps: np.ndarray, store_bytes: np.ndarray, rate: float, result, bin_us: float = 10.0):
    """(t_us, rebuilt, simulated): the X-Stage's bytes averaged over bins of ``bin_us`` from each run's start,
    over the longer of the two runs (the rebuilt one ends at its last tile's end)."""
    held, _, t0 = link_queue(stamps, store_bytes, rate)
    t, q = (np.asarray(a, dtype=float) for a in result.traces[0][:2])
    per = int(round(bin_us * 1e3 / DT_NS))
    span_us = (float(stamps[:, 5].max()) - t0) / 1e3
    n = int(np.ceil(max(span_us, float(result.makespan_us)) / bin_us))
    measured = np.zeros(n * per)
    measured[:min(len(held), n * per)] = held[:n * per]
    fine = (np.arange(n * per) + 0.5) * DT_NS / 1e3
    sim = np.interp(fine, t, q, right=0.0)
    return np.arange(n) * bin_us, measured.reshape(n, per).mean(1), sim.reshape(n, per).mean(1)
