"""A workload compiled for the simulator: per-producer tile streams as a struct of arrays.

Scenario builders (``xsim.builders``) turn named parameters into a :class:`Workload`; both
engines consume exactly this, so it is the contract between "what runs" and "how it is
simulated". Tiles are stored stream by stream: producer p's tiles are
``offsets[p]:offsets[p + 1]``, in the order its compute role runs them.

Per tile:
- ``mainloop_us``: compute-role (MMA) time; for microbenchmarks, the producer-side gap G.
- ``epilogue_us``: fixed issuer time before the first remote store (accumulator read, convert).
- ``bytes``: remote-store bytes the issuer injects into its GPU's X-Stage (0: local only).
- ``t_iss0_us``: backpressure-free time to issue those bytes; the issuer injects at
  ``bytes / t_iss0_us`` whenever the X-Stage has room.
- ``release_us``: earliest mainloop start (e.g. Dispatch readiness).
- ``wait_counter``/``wait_value``: the mainloop may start only once counter
  ``wait_counter`` has reached ``wait_value`` (-1: no wait). Counters model ``l2_full``-style
  readiness and grid barriers.
- ``signal_counter``: counter incremented when the tile's issue ends (-1: none), or at its
  drain end if ``signal_on_drain`` (an arrival that waits behind the producer's stores, as a
  grid barrier's atomic does on the hardware). A tile's drain end is when its last byte has
  drained; for a tile without remote bytes, when every byte its producer issued before it has
  drained (and never before its issue end).

- ``burst_index``: the burst (round) a tile belongs to: the statistics cut warm-up by it
  (``burst_index >= warmup_bursts``) and group tiles of the same burst across producers
  (``SimResult.burst_issue_stats``). The microbenchmark builder gives a burst tile and its gap
  tile the burst's number; left out, it is the tile's position in its stream.

Per producer, ``producer_weight`` is its arbitration weight when the X-Stage is full (see
:func:`xsim.des.water_fill.flows`); equal weights share the drain fairly.

``mainloop_loads``: the tiles' mainloops load memory, so a ``load_gate``
(:class:`xsim.load_gate.LoadGate`, the platform's) holds each of them (with ``mainloop_us >
0``) until the X-Stage's occupancy is at or below its threshold; with coupling "xstage" only
(completion-coupled producers already wait for everything). Default False: no gate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from xsim.load_gate import LoadGate

COUPLINGS = ("xstage", "completion-coupled")


@dataclass(frozen=True)
class XStageParams:
    """One source GPU's X-Stage: drain rate (bytes/us) and capacity (bytes)."""

    drain_bytes_per_us: float
    capacity_bytes: float

    def __post_init__(self) -> None:
        if not self.drain_bytes_per_us > 0:
            raise ValueError(f'"drain_bytes_per_us" must be > 0, got {self.drain_bytes_per_us!r}')
        if not self.capacity_bytes > 0:
            raise ValueError(f'"capacity_bytes" must be > 0, got {self.capacity_bytes!r}')


@dataclass(frozen=True, eq=False)
class Workload:
    offsets: np.ndarray        # int64[P + 1]
    producer_gpu: np.ndarray   # int64[P]: which X-Stage each producer injects into
    kind: np.ndarray           # int64[T]: index into kind_names
    mainloop_us: np.ndarray    # float64[T]
    epilogue_us: np.ndarray    # float64[T]
    bytes: np.ndarray          # float64[T]
    t_iss0_us: np.ndarray      # float64[T]
    release_us: np.ndarray     # float64[T]
    wait_counter: np.ndarray   # int64[T]
    wait_value: np.ndarray     # int64[T]
    signal_counter: np.ndarray  # int64[T]
    xstages: tuple[XStageParams, ...]
    kind_names: tuple[str, ...] = ("tile",)
    n_counters: int = 0
    staging_depth: int = 2
    coupling: str = "xstage"
    burst_index: np.ndarray = field(default=None)  # int64[T]: the burst a tile belongs to (default: position)
    signal_on_drain: np.ndarray = field(default=None)  # bool[T]: signal at drain end, not issue end
    producer_weight: np.ndarray = field(default=None)  # float64[P]: arbitration weight under backpressure
    producer_capacity: np.ndarray | None = None  # float64[P]: factor on the equal share Q / n (None: 1 each)
    mainloop_loads: bool = False       # mainloops load memory: the load gate holds them
    load_gate: LoadGate | None = None  # the platform's load gate (None: mainloops never wait)

    def __post_init__(self) -> None:
        n_tiles = int(self.offsets[-1])
        for name in ("kind", "mainloop_us", "epilogue_us", "bytes", "t_iss0_us", "release_us",
                     "wait_counter", "wait_value", "signal_counter"):
            if len(getattr(self, name)) != n_tiles:
                raise ValueError(f"workload array {name!r} has {len(getattr(self, name))} entries, expected {n_tiles}")
        if self.coupling not in COUPLINGS:
            raise ValueError(f'"coupling" must be one of {COUPLINGS}, got {self.coupling!r}')
        if not isinstance(self.mainloop_loads, bool):
            raise ValueError(f'"mainloop_loads" must be a bool, got {self.mainloop_loads!r}')
        if self.load_gate is not None and not isinstance(self.load_gate, LoadGate):
            raise ValueError(f'"load_gate" must be a LoadGate or None, got {type(self.load_gate).__name__}')
        if self.staging_depth < 0:
            raise ValueError(f'"staging_depth" must be >= 0, got {self.staging_depth!r}')
        for name in ("mainloop_us", "epilogue_us", "bytes", "release_us"):
            if np.any(getattr(self, name) < 0):
                raise ValueError(f'"{name}" must be >= 0 for every tile')
        if np.any((self.bytes > 0) & ~(self.t_iss0_us > 0)):
            raise ValueError('"t_iss0_us" must be > 0 for every tile with remote bytes')
        if np.any(self.producer_gpu >= len(self.xstages)) or np.any(self.producer_gpu < 0):
            raise ValueError("producer_gpu names an X-Stage that does not exist")
        if np.any(self.wait_counter >= self.n_counters) or np.any(self.signal_counter >= self.n_counters):
            raise ValueError("a tile names a counter >= n_counters")
        if self.signal_on_drain is None:
            object.__setattr__(self, "signal_on_drain", np.zeros(n_tiles, dtype=bool))
        if self.producer_weight is None:
            object.__setattr__(self, "producer_weight", np.ones(self.n_producers))
        if len(self.signal_on_drain) != n_tiles or len(self.producer_weight) != self.n_producers:
            raise ValueError("signal_on_drain needs one entry per tile and producer_weight one per producer")
        if not np.all(self.producer_weight > 0):
            raise ValueError('"producer_weight" must be > 0 for every producer')
        if self.producer_capacity is not None and (len(self.producer_capacity) != self.n_producers
                                                   or not np.all(np.isfinite(self.producer_capacity))
                                                   or not np.all(np.asarray(self.producer_capacity) > 0)):
            raise ValueError('"producer_capacity" must be one finite number > 0 per producer')
        if self.burst_index is None:
            index = np.concatenate([np.arange(b - a) for a, b in zip(self.offsets[:-1], self.offsets[1:])]
                                   ) if n_tiles else np.zeros(0, np.int64)
            object.__setattr__(self, "burst_index", index.astype(np.int64))

    @property
    def n_producers(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_tiles(self) -> int:
        return int(self.offsets[-1])

    @property
    def producer(self) -> np.ndarray:
        """int64[T]: the producer of each tile."""
        return np.repeat(np.arange(self.n_producers), np.diff(self.offsets))

    @property
    def gate(self) -> LoadGate | None:
        """The load gate the engines apply: the workload's, if its mainloops load memory, it
        couples through the X-Stage and the threshold is finite; else None."""
        gate = self.load_gate
        if not self.mainloop_loads or gate is None or gate.is_open or self.coupling != "xstage":
            return None
        return gate

    @property
    def slots(self) -> int:
        """Staging slots per producer. S = 0 (the issuer is the compute role) and S = 1 time alike."""
        return max(self.staging_depth, 1)
