"""Mainloops that share HBM: a processor-sharing simulator of a tile table run locally.

The compute model (:mod:`xsim.moe.compute`) gives every tile of a shape one mainloop time, the
mean over both schedules. Measured without the link, the mainloops depend on what runs beside
them: in the expert-wave schedule's all-Linear-1 phases every SM streams its own weight slice
and the Linear-1 mainloops are 10-20 % longer than beside Linear-2 tiles. This module runs a
tile table as the local control does (no X-Stage, no link) with the mainloops sharing one HBM:

- tile i's mainloop needs ``compute_us[i]`` of its SM's tensor cores and reads ``B_i(t)`` bytes
  from HBM over its whole mainloop; at full speed it asks for ``d_i = B_i / compute_us[i]``
  bytes per us;
- the running mainloops share the bandwidth ``hbm_bytes_per_us`` max-min fairly (water-fill:
  a mainloop asking less than the level gets what it asks, the others the level); a mainloop
  advances at ``share_i / B_i`` of its work per us, i.e. at ``min(1 / compute_us, share / B)``;
- **L2 reuse rule**: a tile reads two blocks, its weight slice (``w_bytes``, identified by
  ``w_block``) and its activation rows (``a_bytes``, ``a_block``); a block read by n mainloops
  running at the same instant is read from HBM once, each of them charged 1/n of it
  (``B_i(t) = w_bytes / n_w(t) + a_bytes / n_a(t)``). Nothing is reused across time (a block
  is read again by a mainloop that starts after the last one holding it ended), and stores
  cost no bandwidth.

Each stream (a persistent CTA) runs its tiles in order: the wait for its dependency
(``counter[wait_counter] >= wait_value``; -1: none), ``pre_us`` (fixed: bookkeeping, the wait
with nothing pending, the kernel's prologue before a program's first tile: where the DES puts
them, at the head of the mainloop), the shared mainloop,
``post_us`` (fixed: epilogue, stores), then ``counter[signal_counter] += 1`` (-1: none).
Same-instant transitions are handled in stream order, repeated until none is left; rates are
recomputed whenever the set of running mainloops changes. The loop is compiled (numba, no
allocation: every work array is passed in).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from xsim.des.jit import cached_kernel
from xsim.params import ParamError

PRE, WAIT, MAIN, POST, DONE = range(5)
_FLOAT = ("pre_us", "compute_us", "post_us", "w_bytes", "a_bytes", "weight")
_INT = ("w_block", "a_block", "wait_counter", "wait_value", "signal_counter")


@dataclass(frozen=True, eq=False)
class ContentionTiles:
    """A tile table as the contention simulator runs it: per-tile arrays in stream order.

    ``offsets`` int64[S + 1] (stream s runs tiles ``offsets[s]:offsets[s+1]``); float64[T]
    ``pre_us``, ``compute_us``, ``post_us``, ``w_bytes``, ``a_bytes``; int64[T] ``w_block``,
    ``a_block`` (block ids >= 0), ``wait_counter``, ``signal_counter`` (counter ids, -1 none),
    ``wait_value``; ``n_counters``.
    """

    offsets: np.ndarray
    pre_us: np.ndarray
    compute_us: np.ndarray
    post_us: np.ndarray
    w_bytes: np.ndarray
    w_block: np.ndarray
    a_bytes: np.ndarray
    a_block: np.ndarray
    wait_counter: np.ndarray
    wait_value: np.ndarray
    signal_counter: np.ndarray
    n_counters: int
    weight: np.ndarray | None = None   # float64[T] > 0: the share weight (None: all 1, max-min fair)

    def __post_init__(self) -> None:
        if self.weight is None:
            object.__setattr__(self, "weight", np.ones(len(np.asarray(self.pre_us))))
        offsets = np.asarray(self.offsets)
        if offsets.ndim != 1 or len(offsets) < 2 or offsets[0] != 0 or np.any(np.diff(offsets) < 0):
            raise ParamError('"offsets" must rise from 0 over at least one stream.')
        n = int(offsets[-1])
        for name in _FLOAT + _INT:
            value = np.asarray(getattr(self, name))
            if value.shape != (n,):
                raise ParamError(f'"{name}" must have one value per tile ({n}), got shape {value.shape}.')
        for name in _FLOAT:
            value = np.asarray(getattr(self, name), dtype=float)
            if not np.all(np.isfinite(value)) or np.any(value < 0):
                raise ParamError(f'"{name}" must be finite and >= 0.')
        if np.any((np.asarray(self.compute_us) == 0) & (np.asarray(self.w_bytes) + np.asarray(self.a_bytes) == 0)):
            raise ParamError('a tile needs "compute_us" > 0 or bytes > 0.')
        if not np.all(np.asarray(self.weight) > 0):
            raise ParamError('"weight" must be > 0.')
        if np.any(np.asarray(self.w_block) < 0) or np.any(np.asarray(self.a_block) < 0):
            raise ParamError('"w_block" and "a_block" must be >= 0.')
        if not isinstance(self.n_counters, (int, np.integer)) or self.n_counters < 0:
            raise ParamError('"n_counters" must be a whole number >= 0.')
        for name in ("wait_counter", "signal_counter"):
            value = np.asarray(getattr(self, name))
            if np.any((value < -1) | (value >= self.n_counters)):
                raise ParamError(f'"{name}" must be -1 or a counter id below "n_counters" ({self.n_counters}).')

    @property
    def n_tiles(self) -> int:
        return int(np.asarray(self.offsets)[-1])


@dataclass(frozen=True, eq=False)
class ContentionResult:
    mainloop_start_us: np.ndarray   # float64[T]
    mainloop_end_us: np.ndarray     # float64[T]
    tile_end_us: np.ndarray         # float64[T]: post_us ended, signal given
    makespan_us: float

    @property
    def mainloop_us(self) -> np.ndarray:
        """Each tile's mainloop in context (start to end, the sharing included)."""
        return self.mainloop_end_us - self.mainloop_start_us


def simulate(tiles: ContentionTiles, hbm_bytes_per_us: float) -> ContentionResult:
    """Run the streams with their mainloops sharing ``hbm_bytes_per_us`` (bytes per us; > 0)."""
    if not (isinstance(hbm_bytes_per_us, (int, float, np.floating)) and hbm_bytes_per_us > 0
            and math.isfinite(hbm_bytes_per_us)):
        raise ParamError(f'"hbm_bytes_per_us" must be a finite number > 0, got {hbm_bytes_per_us!r}.')
    n, s = tiles.n_tiles, len(tiles.offsets) - 1
    f = {name: np.ascontiguousarray(getattr(tiles, name), dtype=np.float64) for name in _FLOAT}
    i = {name: np.ascontiguousarray(getattr(tiles, name), dtype=np.int64) for name in _INT}
    n_w, n_a = int(i["w_block"].max(initial=0)) + 1, int(i["a_block"].max(initial=0)) + 1
    start, end, done = np.zeros(n), np.zeros(n), np.zeros(n)
    ints = np.zeros((3, s), np.int64)            # pos, phase, saturated
    floats = np.zeros((4, s))                    # t_end, remaining work, rate, bytes
    counts = (np.zeros(max(tiles.n_counters, 1), np.int64), np.zeros(n_w, np.int64), np.zeros(n_a, np.int64))
    makespan = _run(np.ascontiguousarray(tiles.offsets, dtype=np.int64), f["pre_us"], f["compute_us"],
                    f["post_us"], f["w_bytes"], i["w_block"], f["a_bytes"], i["a_block"], f["weight"], i["wait_counter"],
                    i["wait_value"], i["signal_counter"], float(hbm_bytes_per_us), *counts,
                    ints[0], ints[1], ints[2], floats[0], floats[1], floats[2], floats[3], start, end, done)
    if makespan < 0:
        raise ParamError("contention tiles: the streams deadlock (a dependency is never signalled).")
    return ContentionResult(start, end, done, float(makespan))


@cached_kernel()
def _run(offsets, pre_us, compute_us, post_us, w_bytes, w_block, a_bytes, a_block, weight, wait_counter,
         wait_value, signal_counter, bw, counters, w_count, a_count, pos, phase, sat, t_end, rem, rate, byt, start, end, done):
    n_streams = len(offsets) - 1
    left = 0
    for s in range(n_streams):
        pos[s] = offsets[s]
        phase[s] = DONE
        if offsets[s] < offsets[s + 1]:
            phase[s] = WAIT
            left += 1
    now, makespan = 0.0, 0.0
    while left > 0:
        changed, moved = False, True
        while moved:
            moved = False
            for s in range(n_streams):
                k = pos[s]
                if phase[s] == WAIT:
                    c = wait_counter[k]
                    if c < 0 or counters[c] >= wait_value[k]:
                        phase[s], t_end[s], moved = PRE, now + pre_us[k], True
                if phase[s] == PRE and t_end[s] <= now:
                    phase[s], rem[s], start[k] = MAIN, 1.0, now
                    w_count[w_block[k]] += 1
                    a_count[a_block[k]] += 1
                    changed = moved = True
                if phase[s] == MAIN and rem[s] <= 0.0:
                    end[k] = now
                    w_count[w_block[k]] -= 1
                    a_count[a_block[k]] -= 1
                    phase[s], t_end[s] = POST, now + post_us[k]
                    changed = moved = True
                if phase[s] == POST and t_end[s] <= now:
                    done[k] = now
                    makespan = max(makespan, now)
                    if signal_counter[k] >= 0:
                        counters[signal_counter[k]] += 1
                    pos[s] = k + 1
                    if k + 1 < offsets[s + 1]:
                        phase[s] = WAIT
                    else:
                        phase[s] = DONE
                        left -= 1
                    moved = True
        if left == 0:
            break
        if changed:
            _rates(pos, phase, sat, rem, rate, byt, compute_us, w_bytes, w_block, a_bytes, a_block, weight, w_count,
                   a_count, bw)
        t_next = math.inf
        for s in range(n_streams):
            if phase[s] == PRE or phase[s] == POST:
                t_next = min(t_next, t_end[s])
            elif phase[s] == MAIN:
                t_next = min(t_next, now + rem[s] / rate[s])
        if t_next == math.inf:
            return -1.0
        for s in range(n_streams):
            if phase[s] == MAIN:
                if now + rem[s] / rate[s] <= t_next * (1.0 + 1e-13):
                    rem[s] = 0.0
                else:
                    rem[s] -= rate[s] * (t_next - now)
        now = t_next
    return makespan


@cached_kernel()
def _rates(pos, phase, sat, rem, rate, byt, compute_us, w_bytes, w_block, a_bytes, a_block, weight, w_count, a_count,
           bw):
    """Each running mainloop's rate (work per us): the weighted water-fill of ``bw`` over their
    demands (a mainloop asking less than ``level x weight`` gets its demand, the others that)."""
    weights, budget = 0.0, bw
    for s in range(len(pos)):
        sat[s] = 1
        if phase[s] != MAIN or rem[s] <= 0.0:
            continue
        k = pos[s]
        byt[s] = w_bytes[k] / w_count[w_block[k]] + a_bytes[k] / a_count[a_block[k]]
        if byt[s] == 0.0:
            rate[s] = 1.0 / compute_us[k]
        else:
            sat[s] = 0
            weights += weight[k]
    more = weights > 0.0
    level = 0.0
    while more:
        level, more = budget / weights, False
        for s in range(len(pos)):
            k = pos[s]
            if sat[s] == 0 and compute_us[k] > 0.0 and byt[s] / compute_us[k] <= level * weight[k]:
                sat[s], rate[s] = 1, 1.0 / compute_us[k]
                budget -= byt[s] / compute_us[k]
                weights -= weight[k]
                more = weights > 0.0
    for s in range(len(pos)):
        if sat[s] == 0:
            rate[s] = level * weight[pos[s]] / byt[s]
