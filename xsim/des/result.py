"""What a simulation returns: the per-tile table, the q(t) traces, and their summaries."""

from __future__ import annotations

import csv
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from xsim.stats import Stats
from xsim.workload import Workload


@dataclass
class TileTimes:
    """Per-tile event times (microseconds), indexed like the workload's tile arrays."""

    mainloop_start: np.ndarray
    mainloop_end: np.ndarray
    issue_start: np.ndarray
    issue_end: np.ndarray
    drain_end: np.ndarray
    stall_us: np.ndarray      # waiting for a staging slot (and the load gate) after dependencies were met
    dep_wait_us: np.ndarray   # waiting for the tile's counter dependency
    gate_wait_us: np.ndarray  # waiting at the load gate with a slot held (0 without a gate)

    @classmethod
    def empty(cls, n: int) -> "TileTimes":
        return cls(*(np.full(n, np.nan) for _ in fields(cls)))

    def columns(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class SimResult:
    workload: Workload
    times: TileTimes
    traces: list  # per X-Stage: (t_us, q_bytes) breakpoints of the piecewise-linear q(t), or None
    engine: str
    drained_bytes: list | None = None  # per X-Stage: cumulative bytes drained by the end

    @property
    def makespan_us(self) -> float:
        t = self.times
        return float(np.nanmax(np.concatenate([t.mainloop_end, t.issue_end, t.drain_end]))) \
            if self.workload.n_tiles else 0.0

    @property
    def issue_us(self) -> np.ndarray:
        """Sender-visible remote-store span per tile: issue end - issue start (T_RS)."""
        return self.times.issue_end - self.times.issue_start

    def _steady(self, warmup_bursts: int) -> np.ndarray:
        w = self.workload
        return (w.bytes > 0) & (w.burst_index >= warmup_bursts)

    def issue_stats(self, warmup_bursts: int = 0) -> Stats:
        """Issue time of every (producer, burst) with remote bytes, after warm-up."""
        return Stats.of(self.issue_us[self._steady(warmup_bursts)])

    def period_stats(self, warmup_bursts: int = 0) -> Stats:
        """Start-to-start period of consecutive bursts of each producer, after warm-up."""
        w = self.workload
        periods = []
        for p in range(w.n_producers):
            lo, hi = w.offsets[p], w.offsets[p + 1]
            keep = (w.bytes[lo:hi] > 0)
            starts = self.times.issue_start[lo:hi][keep]
            index = w.burst_index[lo:hi][keep]
            d = np.diff(starts)
            periods.append(d[index[1:] >= warmup_bursts])
        return Stats.of(np.concatenate(periods) if periods else np.zeros(0))

    def burst_issue_stats(self, warmup_bursts: int = 0) -> Stats:
        """Per burst index: first producer's issue start to last producer's issue end."""
        w = self.workload
        keep = self._steady(warmup_bursts)
        idx = w.burst_index[keep]
        if idx.size == 0:
            return Stats.of(idx)
        starts = np.full(idx.max() + 1, np.inf)
        ends = np.full(idx.max() + 1, -np.inf)
        np.minimum.at(starts, idx, self.times.issue_start[keep])
        np.maximum.at(ends, idx, self.times.issue_end[keep])
        present = np.isfinite(starts)
        return Stats.of((ends - starts)[present])

    def stall_stats(self) -> Stats:
        return Stats.of(self.times.stall_us)

    def busy_fraction(self, bin_us: float) -> tuple[np.ndarray, np.ndarray]:
        """Tensor-core busy fraction over time: share of producers in a mainloop per bin."""
        if not bin_us > 0:
            raise ValueError(f'"bin_us" must be > 0, got {bin_us!r}')
        edges = np.arange(0.0, self.makespan_us + bin_us, bin_us)
        busy = np.zeros(len(edges) - 1)
        for a, b in zip(self.times.mainloop_start, self.times.mainloop_end):
            lo, hi = np.clip(edges[:-1], a, b), np.clip(edges[1:], a, b)
            busy += hi - lo
        return edges[:-1], busy / (bin_us * max(self.workload.n_producers, 1))

    def table(self) -> dict[str, np.ndarray]:
        """The per-tile table: producer, kind, burst index, bytes and every event time."""
        w = self.workload
        cols = {
            "producer": w.producer,
            "gpu": w.producer_gpu[w.producer],
            "kind": np.asarray(w.kind_names, dtype=object)[w.kind],
            "index": w.burst_index,
            "bytes": w.bytes,
        }
        cols.update(self.times.columns())
        cols["issue_us"] = self.issue_us
        return cols

    def write_csv(self, path: str | Path) -> None:
        cols = self.table()
        with open(path, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(cols)
            for row in zip(*cols.values()):
                writer.writerow([f"{v:.9g}" if isinstance(v, float) else v for v in row])
