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

KIND_NAMES = ("store", "gap", "load")
STORE, GAP, LOAD = range(3)


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

    def __post_init__(self) -> None:
        if self.storers < 0 or self.loaders < 0 or self.storers + self.loaders < 1:
            raise ValueError('"storers" and "loaders" must be >= 0, with at least one CTA.')
        if self.burst_bytes < 0 or self.gap_us < 0 or self.base_us < 0:
            raise ValueError('"burst_bytes", "gap_us" and "base_us" must be >= 0.')


def _streams(shape: Shape) -> list[list[int]]:
    store = [STORE] + ([GAP] if shape.gap_us > 0 else []) + ([LOAD] if shape.storers_load else [])
    return [store] * shape.storers + [[LOAD]] * shape.loaders


def workload(shape: Shape, platform: Platform, gate: LoadGate | None) -> Workload:
    streams = _streams(shape)
    kinds = np.array([k for s in streams for k in s], dtype=np.int64)
    n = len(kinds)
    is_store = kinds == STORE
    k_store = max(shape.storers, 1)
    t0 = platform.t_iss0_us(k_store, shape.burst_bytes, shape.threads) if shape.burst_bytes > 0 else 0.0
    producers = len(streams)
    stage = XStageParams(gbps_to_bytes_per_us(platform.drain_rate_gbps), platform.capacity_bytes(k_store))
    return Workload(
        offsets=np.concatenate([[0], np.cumsum([len(s) for s in streams])]).astype(np.int64),
        producer_gpu=np.array([0] * shape.storers + [1] * shape.loaders, dtype=np.int64),
        kind=kinds,
        mainloop_us=np.where(kinds == LOAD, shape.base_us, 0.0),
        epilogue_us=np.where(kinds == GAP, shape.gap_us, 0.0),
        bytes=np.where(is_store, float(shape.burst_bytes), 0.0),
        t_iss0_us=np.where(is_store & (shape.burst_bytes > 0), t0, 0.0),
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
    loader_tile = load & (owner >= shape.storers)
    wait = np.nan_to_num(result.times.gate_wait_us, nan=0.0)
    return Prediction(storer_load_us=wait[storer_tile] + shape.base_us, loader_load_us=wait[loader_tile] + shape.base_us,
                      storer_gate_wait_us=wait[storer_tile], loader_gate_wait_us=wait[loader_tile])
