"""The fused MoE kernel at the power cap's clock: each schedule's time and clock solved together.

Run back to back, an H200 holds its 700 W cap and the SM clock follows the SMs' busy fraction
(:mod:`xsim.attention.clock`). Measured on the MoE kernel itself (``hwkernels.moe_duty``: the
local-Combine kernel of each config and schedule alone, then with idle gaps of g kernel lengths;
:func:`calibration.power.fit_moe_clock_law` fits it), the law has

- per (config, schedule) an **anchor** f0: the kernel alone at the cap (the schedules differ: the
  interleaved table's denser compute draws more power per SM than the wave table's bubbles);
- per config a **ceiling** f_c: its clock with the power under the cap, where the compute model's
  burst mainloop records ran (one launch after an idle gap never reaches the cap);
- one exponent beta: f = min(f_c, f0 (u0 / u)^beta).

The DES with ``compute_scale`` s runs every tile's compute s times the compute model's: the kernel
at f_c / s. A schedule over the link computes what its local-Combine kernel computes, in a longer
time T, so its busy ratio against the anchor is T / T_local at the same clock. With the local kernel
at the anchor's clock as the reference (s0 = f_c / f0, its time t_ref) the clock and time are
:func:`xsim.attention.clock.solve`'s fixed point: the reference scales as t_ref x, the kernel over
the link is the DES at s0 x. Nothing in it is a measured time of the kernel over the link.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xsim.attention.clock import ClockLaw, solve
from xsim.platform import Platform

SCHEDULES = ("wave", "interleaved")


@dataclass(frozen=True)
class MoEClockLaw:
    """``beta``; ``ceilings`` (config, MHz); ``anchors`` ((config, schedule), MHz)."""

    beta: float
    ceilings: tuple[tuple[str, float], ...]
    anchors: tuple[tuple[tuple[str, str], float], ...]
    source: str = ""

    def __post_init__(self):
        if not (math.isfinite(self.beta) and self.beta >= 0):
            raise ValueError(f'"beta" must be a finite number >= 0, got {self.beta!r}')
        if any(not (f > 0) for _, f in self.ceilings + self.anchors):
            raise ValueError("a MoE clock law's ceilings and anchors need MHz > 0")

    def covers(self, config: str) -> bool:
        """Whether the law has the config's ceiling and both schedules' anchors."""
        anchors = dict(self.anchors)
        return config in dict(self.ceilings) and all((config, s) in anchors for s in SCHEDULES)

    def ceiling_mhz(self, config: str) -> float:
        try:
            return dict(self.ceilings)[config]
        except KeyError:
            raise ValueError(f"the MoE clock law has no ceiling for {config!r} (no uncapped duty point)") from None

    def anchor_mhz(self, config: str, schedule: str) -> float:
        try:
            return dict(self.anchors)[config, schedule]
        except KeyError:
            raise ValueError(f"the MoE clock law has no anchor for {config!r} {schedule} "
                             "(no duty record of gap_kind none)") from None

    def law(self, config: str, schedule: str) -> ClockLaw:
        """The (config, schedule)'s law as a one-point :class:`ClockLaw` (its key 1)."""
        return ClockLaw(self.beta, ((1, self.ceiling_mhz(config)),), self.source,
                        ((1, self.anchor_mhz(config, schedule)),))

    def to_dict(self) -> dict:
        return {"beta": self.beta, "ceilings_mhz": dict(self.ceilings),
                "anchors_mhz": {f"{c} {s}": f for (c, s), f in self.anchors}, "source": self.source}


def solve_schedule(law: MoEClockLaw, config: str, schedule: str, kernel_us) -> dict:
    """One schedule's time and clock at the cap. ``kernel_us(s, local)``: the DES's kernel time at
    compute scale ``s`` over the link (``local`` False) or without it (True)."""
    f_c, f0 = law.ceiling_mhz(config), law.anchor_mhz(config, schedule)
    s0 = f_c / f0
    t_ref = kernel_us(s0, True)
    scales = []

    def residual(x: float) -> float:
        scales.append(x)
        return kernel_us(s0 * x, False) - t_ref * x

    t, f = solve(law.law(config, schedule), t_ref, f0, 1, residual)
    return {"kernel_us": t, "predicted_mhz": f, "compute_scale": s0 * scales[-1], "anchor_mhz": f0,
            "ceiling_mhz": f_c, "local_at_anchor_us": t_ref, "iterations": len(scales)}


def simulate(params: dict, config: str, platform: Platform, law: MoEClockLaw, engine: str = "fast",
             mainloop_records: list[dict] | None = None) -> dict:
    """Both schedules of ``params`` at the cap: {schedule: solve_schedule's dict and its DES
    ``summary`` at the solved clock, "speedup": ...}."""
    from xsim.builders import moe as builder

    local = builder.without_link(platform)
    cache: dict = {}

    def run(schedule: str, s: float, is_local: bool) -> dict:
        key = (schedule, s, is_local)
        if key not in cache:
            p = {**params, "schedule": schedule, "compute_scale": s}
            cache[key] = builder.simulate(p, local if is_local else platform, engine, trace=False,
                                          mainloop_records=mainloop_records)[1]
        return cache[key]

    out = {}
    for schedule in SCHEDULES:
        solved = solve_schedule(law, config, schedule, lambda x, loc, s=schedule: run(s, x, loc)["kernel_us"])
        out[schedule] = {**solved, "summary": run(schedule, solved["compute_scale"], False)}
    out["speedup"] = out["wave"]["kernel_us"] / out["interleaved"]["kernel_us"]
    return out


def at_cap(fixed: dict, solved: dict) -> dict:
    """The prediction at the cap in the shape of ``builder.simulate``'s two-schedule summary: ``fixed``
    (that summary, one clock) with each schedule's distributions, the speedup and the selector's pick
    from ``solved`` (:func:`simulate`), the fixed clock's speedup as ``speedup_fixed_clock`` and each
    schedule's solve in ``clock``."""
    from xsim.moe import selector

    out = dict(fixed)
    for s in SCHEDULES:
        out[s] = {k: v for k, v in solved[s]["summary"].items() if k in fixed[s]}
    out["speedup"], out["speedup_fixed_clock"] = solved["speedup"], fixed["speedup"]
    out["clock"] = {s: {k: v for k, v in solved[s].items() if k != "summary"} for s in SCHEDULES}
    loc = {s: selector.Locality(**fixed["selector"][s]) for s in SCHEDULES}
    out["selector"] = selector.pick(out["wave"]["kernel_us"], out["interleaved"]["kernel_us"],
                                    loc["wave"], loc["interleaved"]).to_dict()
    return out
