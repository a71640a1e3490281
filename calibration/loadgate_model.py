"""The load-gate microbenchmark (``hwkernels/loadgate_bench.py``) as a DES workload, and its prediction.

One point: ``storers`` CTAs store ``burst_bytes`` each into the X-Stage at t = 0 (after the
kernel's grid barrier), then, after an optional spin of ``gap_us``, run a load phase whose
length without any gate is ``base_us`` (the measured B = 0 point of the same launch shape: the
DES does not model HBM loads). ``loaders`` more CTAs store nothing and run only the load phase
(bystanders on other SMs, or the co-resident CTAs of the ``cosm`` variant). Per storer the tile
stream is: store (mainloop 0, the bytes), [gap (the spin as an epilogue with no bytes, so the
load waits for it through the staging slot)], load (mainloop ``base_us``, gated); per loader:
load. ``staging_depth`` 1: a CTA's load phase starts after its stores were issued (and the gap).
The loaders sit on a second, idle X-Stage: the DES splits a stage's capacity evenly over its
producers, so a CTA that never stores would take a share of the storers' Q. They start at t = 0,
before any byte is in a stage, so the DES never holds them (their measured load phases are the
evidence for the scope, not a test of the DES).

``late_ctas`` more CTAs (set C of the ``late``/``stream`` variants) store on the *same* X-Stage
and never load: per CTA, ``late_bursts`` tiles with no mainloop, each an epilogue (the first:
``late_delay_us``, from t = 0; the next ones: ``late_spin_us`` after the previous issue) and then
``late_bytes``. With no late bytes set C is left out (its CTAs only spin).

The prediction of a CTA's load-phase time is its gate wait plus ``base_us``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xsim.des import simulate
from xsim.load_gate import LoadGate
from xsim.platform import Platform
from xsim.units import gbps_to_bytes_per_us
from xsim.workload import Workload, XStageParams

KIND_NAMES = ("store", "gap", "load", "late")
STORE, GAP, LOAD, LATE = range(4)


@dataclass(frozen=True)
class Shape:
    """What the DES needs of a point (bytes, us)."""

    storers: int
    burst_bytes: float
    loaders: int = 0            # CTAs that only load
    storers_load: bool = True   # False: the storing CTAs stop after their stores (cosm)
    gap_us: float = 0.0
    base_us: float = 0.0
    threads: int = 256
    late_ctas: int = 0          # set C: CTAs that store late on the same stage and never load
    late_bytes: float = 0.0
    late_delay_us: float = 0.0
    late_bursts: int = 1
    late_spin_us: float = 0.0

    @property
    def late_storers(self) -> int:
        """Set C's producers in the DES (none when it stores nothing)."""
        return self.late_ctas if self.late_bytes > 0 else 0

    def __post_init__(self) -> None:
        if self.storers < 0 or self.loaders < 0 or self.storers + self.loaders < 1:
            raise ValueError('"storers" and "loaders" must be >= 0, with at least one CTA.')
        if self.burst_bytes < 0 or self.gap_us < 0 or self.base_us < 0:
            raise ValueError('"burst_bytes", "gap_us" and "base_us" must be >= 0.')
        if self.late_ctas < 0 or self.late_bytes < 0 or self.late_delay_us < 0 or self.late_spin_us < 0 \
                or self.late_bursts < 1:
            raise ValueError('"late_ctas", "late_bytes" and the late spins must be >= 0, "late_bursts" >= 1.')


def _streams(shape: Shape) -> list[list[int]]:
    store = [STORE] + ([GAP] if shape.gap_us > 0 else []) + ([LOAD] if shape.storers_load else [])
    return [store] * shape.storers + [[LATE] * shape.late_bursts] * shape.late_storers + [[LOAD]] * shape.loaders


def workload(shape: Shape, platform: Platform, gate: LoadGate | None) -> Workload:
    streams = _streams(shape)
    kinds = np.array([k for s in streams for k in s], dtype=np.int64)
    n = len(kinds)
    is_store = kinds == STORE
    is_late = kinds == LATE
    n_late = shape.late_storers
    k_store = max(shape.storers + n_late, 1)
    t0 = platform.t_iss0_us(max(shape.storers, 1), shape.burst_bytes, shape.threads) if shape.burst_bytes > 0 else 0.0
    t0_late = platform.t_iss0_us(n_late, shape.late_bytes, shape.threads) if n_late else 0.0
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in streams])]).astype(np.int64)
    first_late = is_late & np.isin(np.arange(n), offsets[:-1])   # a C CTA's first burst: after the delay
    producers = len(streams)
    stage = XStageParams(gbps_to_bytes_per_us(platform.drain_rate_gbps), platform.capacity_bytes(k_store))
    return Workload(
        offsets=offsets,
        producer_gpu=np.array([0] * (shape.storers + n_late) + [1] * shape.loaders, dtype=np.int64),
        kind=kinds,
        mainloop_us=np.where(kinds == LOAD, shape.base_us, 0.0),
        epilogue_us=np.select([kinds == GAP, first_late, is_late], [shape.gap_us, shape.late_delay_us, shape.late_spin_us],
                              0.0),
        bytes=np.select([is_store, is_late], [float(shape.burst_bytes), float(shape.late_bytes)], 0.0),
        t_iss0_us=np.select([is_store & (shape.burst_bytes > 0), is_late], [t0, t0_late], 0.0),
        release_us=np.zeros(n),
        wait_counter=np.full(n, -1, dtype=np.int64),
        wait_value=np.zeros(n, dtype=np.int64),
        signal_counter=np.full(n, -1, dtype=np.int64),
        xstages=(stage, stage),
        kind_names=KIND_NAMES,
        staging_depth=1,
        producer_weight=np.asarray(platform.weights_for(producers), dtype=float),
        mainloop_loads=True,
        load_gate=gate,
    )


@dataclass(frozen=True)
class Prediction:
    """Predicted load-phase times (us), per loading CTA: storers' and loaders' (empty if none)."""

    storer_load_us: np.ndarray
    loader_load_us: np.ndarray
    storer_gate_wait_us: np.ndarray
    loader_gate_wait_us: np.ndarray


def predict(shape: Shape, platform: Platform, gate: LoadGate | None, engine: str = "simpy") -> Prediction:
    w = workload(shape, platform, gate)
    result = simulate(w, engine=engine, trace=False)
    load = w.kind == LOAD
    owner = w.producer
    storer_tile = load & (owner < shape.storers)
    loader_tile = load & (owner >= shape.storers + shape.late_storers)
    wait = np.nan_to_num(result.times.gate_wait_us, nan=0.0)
    return Prediction(storer_load_us=wait[storer_tile] + shape.base_us, loader_load_us=wait[loader_tile] + shape.base_us,
                      storer_gate_wait_us=wait[storer_tile], loader_gate_wait_us=wait[loader_tile])
