"""Platform model M_X = (T_iss0(K, B), R, Q(K)) and its versioned JSON profile format (the two
laws, T_iss0 and Q(K), in :mod:`xsim.platform_laws`).

A profile is data with units in every key. ``T_iss0`` depends on the producer count K and the
bytes per producer B; ``Q`` depends on K; ``R`` is the effective aggregate drain rate of one
source GPU's X-Stage, optionally with a per-destination-link rate, and optionally falling at small K
(``drain_half_producers``: :func:`xsim.platform_laws.drain_rate_at`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from xsim.arbitration import Arbitration, ArbitrationError
from xsim.fileio import atomic_write, decode, parse_json, read_bytes
from xsim.load_gate import LoadGate, LoadGateError, gate_from_json, gate_to_json, with_gate
from xsim.platform_laws import CapacityModel, IssueModel, ProfileError, _positive, drain_rate_at
from xsim.units import KIB

SCHEMA = "xstage.platform/1"
MAX_SMS, MAX_GPUS = 100_000, 4096   # far beyond any GPU; keeps K-dependent arithmetic in floats
# The point at which profiles and reports quote T_iss0 and Q(K): one CTA per SM of an H200, 32 KiB bursts.
REFERENCE_PRODUCERS = 132
REFERENCE_BURST_BYTES = 32 * KIB


@dataclass(frozen=True)
class Platform:
    """One source GPU's X-Stage parameters plus where they came from."""

    name: str
    drain_rate_gbps: float
    issue: IssueModel
    capacity: CapacityModel
    link_drain_rate_gbps: float | None = None
    sms: int = 132
    gpus: int = 2
    status: str = "measured"
    description: str = ""
    provenance: Mapping[str, Any] = field(default_factory=dict)
    # Arbitration weight of each producer (CTA index) while the X-Stage is full; None: fair.
    producer_weights: tuple[float, ...] | None = None
    # Costs of the microbenchmark kernel itself on this platform (not of the X-Stage): a grid
    # barrier's latency and the per-burst loop bookkeeping outside the issue span.
    grid_barrier_us: float = 0.0
    burst_overhead_us: float = 0.0
    # The barrier's latency when no gap is spun before it (aligned zero-gap points); None: grid_barrier_us.
    grid_barrier_zero_gap_us: float | None = None
    # Weights by the SM a CTA runs on, and their per-burst spread (xsim.arbitration); when given
    # with sm_weights, they replace producer_weights.
    arbitration: Arbitration | None = None
    # A mainloop that loads memory waits for the X-Stage's occupancy (xsim.load_gate); None: never.
    load_gate: LoadGate | None = None
    # R(K) = R K/(K + K0) normalised to R at REFERENCE_PRODUCERS (Little's law: few producers keep too
    # few stores in flight to fill the path); None: R for every K (xsim.platform_laws.drain_rate_at).
    drain_half_producers: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ProfileError('"name" must be a non-empty string')
        if not isinstance(self.description, str):
            raise ProfileError(f'"description" must be a string, got {type(self.description).__name__}')
        if not isinstance(self.provenance, Mapping):
            raise ProfileError(f'"provenance" must be an object, got {type(self.provenance).__name__}')
        _positive("drain_rate_gbps", self.drain_rate_gbps)
        _positive("link_drain_rate_gbps", self.link_drain_rate_gbps, allow_none=True)
        k0 = self.drain_half_producers
        if k0 is not None and (not isinstance(k0, (int, float)) or isinstance(k0, bool) or not math.isfinite(k0)
                               or k0 < 0):
            raise ProfileError(f'"drain_half_producers" must be a finite number >= 0 or null, got {k0!r}')
        for key, most in (("sms", MAX_SMS), ("gpus", MAX_GPUS)):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= most:
                raise ProfileError(f'"{key}" must be an integer in 1..{most}, got {value!r}')
        if self.producer_weights is not None:
            weights = self.producer_weights
            if len(weights) == 0 or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                            and math.isfinite(x) and x > 0 for x in weights):
                raise ProfileError('"producer_weights" must be a non-empty list of finite numbers > 0')
        for key, optional in (("grid_barrier_us", False), ("burst_overhead_us", False),
                              ("grid_barrier_zero_gap_us", True)):
            value = getattr(self, key)
            if optional and value is None:
                continue
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) \
                    or value < 0:
                raise ProfileError(f'"{key}" must be a finite number >= 0{" or null" if optional else ""}, '
                                   f'got {value!r}')
        if self.load_gate is not None and not isinstance(self.load_gate, LoadGate):
            raise ProfileError(f'"load_gate" must be a LoadGate or None, got {type(self.load_gate).__name__}')
        if self.status not in ("measured", "published", "override"):
            raise ProfileError(f'"status" must be measured, published or override, got {self.status!r}')

    def t_iss0_us(self, producers: int, burst_bytes: float, threads: int | None = None) -> float:
        return self.issue.t_iss0_us(producers, burst_bytes, threads)

    def barrier_us(self, gap_us: float) -> float:
        """The grid barrier's latency after a gap of ``gap_us`` (its own zero-gap value when fitted)."""
        if gap_us == 0 and self.grid_barrier_zero_gap_us is not None:
            return self.grid_barrier_zero_gap_us
        return self.grid_barrier_us

    def capacity_bytes(self, producers: int) -> float:
        return self.capacity.capacity_bytes(producers)

    def weights_for(self, producers: int) -> list[float]:
        """Arbitration weights of producers 0..K-1: by the SM each runs on (``arbitration``), else
        by CTA rank (cycling the measured ones if K exceeds them)."""
        if self.arbitration is not None and self.arbitration.sm_weights is not None:
            return self.arbitration.weights_for(producers)
        if self.producer_weights is None:
            return [1.0] * producers
        return [self.producer_weights[p % len(self.producer_weights)] for p in range(producers)]

    def drain_rate_for(self, producers: int | None = None) -> float:
        """Aggregate drain rate R(K) with ``producers`` storing CTAs (None, or no K law: R)."""
        if producers is None or self.drain_half_producers is None:
            return self.drain_rate_gbps
        return drain_rate_at(self.drain_rate_gbps, producers, self.drain_half_producers, REFERENCE_PRODUCERS)

    def effective_drain_rate_gbps(self, peers: int = 1, producers: int | None = None) -> float:
        """Drain rate of a burst spread evenly over ``peers`` destination links (by ``producers`` CTAs).

        The X-Stage is one FIFO per source GPU, so a mix of destinations drains at the
        aggregate rate R(K) unless the per-link rate caps it: ``min(R(K), peers * R_link)``.
        """
        if peers < 1:
            raise ValueError(f'"peers" must be >= 1, got {peers!r}')
        rate = self.drain_rate_for(producers)
        if self.link_drain_rate_gbps is None:
            return rate
        return min(rate, peers * self.link_drain_rate_gbps)

    def with_overrides(
        self,
        t_iss0_us: float | None = None,
        drain_gbps: float | None = None,
        capacity_bytes: float | None = None,
        load_gate_bytes: float | None = None,
        load_gate_scope: str | None = None,
        load_gate_mode: str | None = None,
    ) -> "Platform":
        """A copy with command-line overrides: a constant T_iss0, R and/or a constant Q; the load
        gate's threshold, scope and/or mode."""
        changes: dict[str, Any] = {}
        if load_gate_bytes is not None or load_gate_scope is not None or load_gate_mode is not None:
            try:
                changes["load_gate"] = with_gate(self.load_gate, load_gate_bytes, load_gate_scope, load_gate_mode)
            except LoadGateError as exc:
                raise ProfileError(str(exc)) from None
        if t_iss0_us is not None:
            changes["issue"] = IssueModel(t_fixed_us=t_iss0_us)
        if drain_gbps is not None:
            changes["drain_rate_gbps"] = drain_gbps
            changes["link_drain_rate_gbps"] = None
            changes["drain_half_producers"] = None
        if capacity_bytes is not None:
            changes["capacity"] = CapacityModel(max_bytes=capacity_bytes)
        if not changes:
            return self
        overridden = sorted(k for k, v in
                            (("t_iss0_us", t_iss0_us), ("drain_gbps", drain_gbps),
                             ("capacity_bytes", capacity_bytes), ("load_gate_bytes", load_gate_bytes),
                             ("load_gate_scope", load_gate_scope), ("load_gate_mode", load_gate_mode)) if v is not None)
        provenance = dict(self.provenance, overridden=overridden)
        return dataclasses.replace(self, status="override", provenance=provenance, **changes)

    # ---- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        gate = gate_to_json(self.load_gate)
        return {
            "schema": SCHEMA,
            "name": self.name,
            "status": self.status,
            "description": self.description,
            "gpu": {"sms": self.sms, "count": self.gpus},
            "drain_rate_gbps": self.drain_rate_gbps,
            "link_drain_rate_gbps": self.link_drain_rate_gbps,
            **({"drain_half_producers": self.drain_half_producers} if self.drain_half_producers is not None else {}),
            "t_iss0": {k: v for k, v in dataclasses.asdict(self.issue).items()
                       if v is not None or k not in ("threads_ref", "thread_terms", "free_running_factor")},
            "capacity": self.capacity.to_dict(),
            "arbitration": {"producer_weights": None if self.producer_weights is None else list(self.producer_weights),
                            **(self.arbitration.to_dict() if self.arbitration is not None else {})},
            "microbench": {"grid_barrier_us": self.grid_barrier_us, "burst_overhead_us": self.burst_overhead_us,
                           **({"grid_barrier_zero_gap_us": self.grid_barrier_zero_gap_us}
                              if self.grid_barrier_zero_gap_us is not None else {})},
            **({"load_gate": gate} if gate is not None else {}),
            "provenance": dict(self.provenance),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Platform":
        if not isinstance(data, Mapping):
            raise ProfileError("a profile must be a JSON object")
        if data.get("schema") != SCHEMA:
            raise ProfileError(f'"schema" must be {SCHEMA!r}, got {data.get("schema")!r}')
        gpu, arbitration, microbench = (_object(data, key) for key in ("gpu", "arbitration", "microbench"))
        try:
            return cls(
                name=data["name"],
                status=data.get("status", "measured"),
                description=data.get("description", ""),
                sms=gpu.get("sms", 132),
                gpus=gpu.get("count", 2),
                drain_rate_gbps=data["drain_rate_gbps"],
                link_drain_rate_gbps=data.get("link_drain_rate_gbps"),
                drain_half_producers=data.get("drain_half_producers"),
                issue=IssueModel(**_object(data, "t_iss0", required=True)),
                capacity=CapacityModel(**_object(data, "capacity", required=True)),
                provenance=data.get("provenance", {}),
                producer_weights=_weights(arbitration.get("producer_weights")),
                grid_barrier_us=microbench.get("grid_barrier_us", 0.0),
                burst_overhead_us=microbench.get("burst_overhead_us", 0.0),
                grid_barrier_zero_gap_us=microbench.get("grid_barrier_zero_gap_us"),
                arbitration=Arbitration.from_dict(arbitration),
                load_gate=gate_from_json(data.get("load_gate")),
            )
        except (ArbitrationError, LoadGateError) as exc:
            raise ProfileError(str(exc)) from None
        except KeyError as exc:
            raise ProfileError(f"profile is missing the key {exc.args[0]!r}") from None
        except TypeError as exc:
            raise ProfileError(f"profile has an unknown or malformed key: {exc}") from None


def _object(data: Mapping[str, Any], key: str, required: bool = False) -> Mapping[str, Any]:
    """``data[key]``, which must be a JSON object (absent: empty, unless required)."""
    if key not in data and not required:
        return {}
    if key not in data:
        raise ProfileError(f"profile is missing the key {key!r}")
    value = data[key]
    if not isinstance(value, Mapping):
        raise ProfileError(f'"{key}" must be an object, got {type(value).__name__}')
    return value


def _weights(value):
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise ProfileError(f'"producer_weights" must be a list of numbers, got {type(value).__name__}')
    return tuple(value)


def load_profile(path: str | Path) -> Platform:
    """Read a profile file; any problem is a ProfileError naming the file."""
    path = Path(path)
    text = decode(read_bytes(path, "profile", ProfileError), f"profile {path}", ProfileError)
    try:
        data = parse_json(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"profile {path} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except ValueError as exc:  # a non-finite number, an integer too long to read
        raise ProfileError(f"profile {path}: {exc}") from None
    try:
        return Platform.from_dict(data)
    except ProfileError as exc:
        raise ProfileError(f"profile {path}: {exc}") from None


def save_profile(platform: Platform, path: str | Path) -> None:
    """Write the profile atomically (never over an input; OutputError if it cannot)."""
    atomic_write(path, json.dumps(platform.to_dict(), indent=2, allow_nan=False) + "\n", "profile")


DEFAULT_PLATFORM = "h200-nvlink-x2"


def _shipped_dir():
    return resources.files("calibration") / "profiles"


def shipped_platforms() -> dict[str, Platform]:
    """The profiles that ship with the package, by name."""
    found = {}
    for entry in sorted(_shipped_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            platform = Platform.from_dict(parse_json(entry.read_text()))
            found[platform.name] = platform
    return found


def resolve_platform(name_or_path: str | None) -> Platform:
    """A shipped profile by name, or a profile file by path; None means the default."""
    name_or_path = name_or_path or DEFAULT_PLATFORM
    shipped = shipped_platforms()
    if name_or_path in shipped:
        return shipped[name_or_path]
    if not isinstance(name_or_path, str):
        raise ProfileError(f"a platform is a name or a file, got {type(name_or_path).__name__}")
    if Path(name_or_path).suffix == ".json" or Path(name_or_path).exists():
        return load_profile(name_or_path)
    raise ProfileError(
        f"unknown platform {name_or_path!r}; shipped: {', '.join(sorted(shipped))} (or give a .json file)"
    )
