"""The design test (eq. 10) on the attention kernel's aligned output wave, and the program
stagger it asks for.

When the K persistent programs reach their tile boundaries together, a wave is one burst of
V = K B_t bytes (eq. 20's worst case: every tile remote). Eq. 10's capacity bound asks
[V - R T_iss0]+ <= Q; a mainloop that loads memory (attention loads K and V every step) meets
the platform's load gate first where it has one (the link's backlog above the gate's threshold
holds the next Q-loops' loads, :mod:`xsim.load_gate`), so the knee is min(Q(K), threshold).

An aligned wave above the knee is the issue's case "then b_m, the number of producers in
flight, or their phase matter". The phase is the one knob that keeps the tile (and the Q-loop)
as it is: program p starts its first tile S p / K late, so the wave's K bursts enter the link
spread over S instead of together, at the injection rate V / S. Eq. 10's rate bound on that
spread burst, V / S <= R, gives the smallest stagger that keeps the link's backlog at about one
tile's bytes: S* = V / R (= G* + T_iss0 of eq. 20). Equal Q-loops keep the phases from wave to
wave, and the grid-stride loop gives the later programs no more tiles than the earlier ones,
so the delay sits mostly in the last wave's slack. Everything here comes from the calibrated
platform and the tile shape; nothing from an application measurement.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from xsim.closedform.burst_gap import DesignTest, design_test
from xsim.platform import Platform
from xsim.units import drain_time_us


@dataclass(frozen=True)
class StaggerDesign:
    wave_bytes: float        # V = K B_t, the aligned wave
    knee_bytes: float        # min(Q(K), load-gate threshold): what a loading mainloop meets
    knee: str                # "load gate" or "capacity"
    aligned: DesignTest      # eq. 10 on the aligned wave against the knee (gap G)
    stagger_us: float        # S* = V / R when the aligned wave is above the knee, else 0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["aligned"] = {**asdict(self.aligned), "ok": self.aligned.ok}
        return d


def design_stagger(platform: Platform, programs: int, tile_bytes: float, gap_us: float = 0.0,
                   peers: int = 1, mainloop_loads: bool = True) -> StaggerDesign:
    """Eq. 10 on the aligned wave of ``programs`` tiles of ``tile_bytes`` (gap ``gap_us``: the
    Q-loop before the next wave, for the rate bound), drained over ``peers`` links; the stagger
    S* (us) the kernel should run with (0 when the aligned wave is already under the knee)."""
    if programs < 1 or tile_bytes <= 0:
        raise ValueError(f'"programs" must be >= 1 and "tile_bytes" > 0, got {programs!r}, {tile_bytes!r}.')
    v = float(programs) * float(tile_bytes)
    rate = platform.effective_drain_rate_gbps(peers)
    knee, kind = platform.capacity_bytes(programs), "capacity"
    gate = platform.load_gate
    if mainloop_loads and gate is not None and gate.threshold_bytes < knee:
        knee, kind = gate.threshold_bytes, "load gate"
    test = design_test(v, gap_us, platform.t_iss0_us(programs, tile_bytes), rate, knee)
    stagger = 0.0 if test.capacity_bound_ok else drain_time_us(v, rate)
    return StaggerDesign(v, knee, kind, test, stagger)
