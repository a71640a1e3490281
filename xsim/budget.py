"""What a simulation will take, known before anything is allocated: tiles, events, memory, time.

A builder says how many tiles a point has and an upper bound of its simulated time
(``size(params, platform) -> (tiles, horizon_us)``); from that, per engine, the memory a run
needs (bytes per tile measured on both engines, docs/cli.md) and its event count (every tile
has five events: mainloop start and end, issue start and end, drain end). A run is refused,
with the estimate in the message, when it needs more memory than the machine has free, more
than :data:`MAX_EVENTS` events, or a simulated time past :data:`MAX_HORIZON_US` (where a
double no longer resolves a nanosecond).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

EVENTS_PER_TILE = 5
MAX_EVENTS = 1_000_000_000            # 200 M tiles: about half an hour on the fast engine
MAX_HORIZON_US = 1e12                 # 11.6 days simulated; a double still resolves 0.1 ns
MEMORY_FRACTION = 0.8                 # of the memory available when the run starts
# Peak bytes per tile: (no trace, q(t) trace, trace + the --out files), measured peak RSS per
# tile (benchmarks/results/bench_memory.txt: fast 306 / 401 / 596, SimPy 1646 / 1854 / 3263), rounded up.
BYTES_PER_TILE = {"fast": (350, 450, 650), "simpy": (2000, 2300, 3600)}
BASE_BYTES = 64 * 2**20               # per run, whatever its size


class BudgetError(ValueError):
    """Work the machine cannot hold (the message carries the estimate)."""


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


def memory_limit_bytes() -> int:
    """What a run may use: a share of the memory available now, or ``XSIM_MEMORY_LIMIT`` bytes."""
    override = os.environ.get("XSIM_MEMORY_LIMIT")
    if override:
        from xsim.units import UnitError, parse_bytes
        try:
            return int(parse_bytes(override))
        except UnitError as exc:
            raise BudgetError(f"XSIM_MEMORY_LIMIT: {exc}") from None
    available = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            available = 8 * 2**30
    return int(available * MEMORY_FRACTION)


@dataclass(frozen=True)
class Estimate:
    """One run: its tiles, events, peak memory and an upper bound of its simulated time."""

    tiles: int
    events: int
    memory_bytes: int
    horizon_us: float
    engine: str

    def describe(self) -> str:
        return (f"{self.tiles:,} tiles, {self.events:,} events, about {_gib(self.memory_bytes)} "
                f"on the {self.engine} engine")

    def problem(self, limit_bytes: int | None = None) -> str | None:
        """Why this run cannot go ahead, or None."""
        limit_bytes = memory_limit_bytes() if limit_bytes is None else limit_bytes
        if not math.isfinite(self.horizon_us) or self.horizon_us > MAX_HORIZON_US:
            return (f"its simulated time would reach {self.horizon_us:.3g} us, past the limit of "
                    f"{MAX_HORIZON_US:.0e} us; shorten the gaps, the bursts or their number")
        if self.events > MAX_EVENTS:
            return f"it needs {self.describe()}: more than the limit of {MAX_EVENTS:,} events"
        if self.memory_bytes > limit_bytes:
            return (f"it needs {self.describe()}, more than the {_gib(limit_bytes)} this machine can "
                    "give; lower the producers or the bursts")
        return None

    def require(self, what: str) -> None:
        problem = self.problem()
        if problem is not None:
            raise BudgetError(f"{what} cannot run: {problem}")


def estimate(builder, params: dict, platform, engine: str, trace: bool, outputs: bool = False) -> Estimate:
    """The estimate of one point of ``builder`` (a module with ``size``) on ``platform``. A builder that
    runs several workloads one after another for a point (``runs(params)``: moe's schedules and spread
    seeds, fa_a2a's clock-law iterations) multiplies the events, not the memory."""
    tiles, horizon_us = builder.size(params, platform)
    runs = builder.runs(params) if hasattr(builder, "runs") else 1
    per_tile = BYTES_PER_TILE.get(engine, BYTES_PER_TILE["simpy"])[2 if outputs else int(trace)]
    return Estimate(int(tiles), EVENTS_PER_TILE * int(tiles) * int(runs), BASE_BYTES + per_tile * int(tiles),
                    float(horizon_us), engine)
