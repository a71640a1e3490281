"""The clock law at the power cap (:class:`xsim.attention.clock.ClockLaw`), fitted on the duty-cycle records.

Records of experiment "power", kind "duty" (``hwkernels.fa_duty``): per sequence length M the FA-only
kernel alone (``gap_kind`` "none", the anchor: busy fraction u0, clock f0) and with ``gap_units`` A2A
store launches after every launch ("store"; "idle" gaps are the control and not fitted). A point is
**power-capped** when nvidia-smi's clock over its runs stays below the board's top clock (the highest
any record reports, less 1 %); an uncapped point runs at the compute ceiling. Then:

- ``beta``: least squares through the origin of ln(f / f0) on ln(u0 / u) over the capped store points
  of every M (each against its own M's anchor);
- the ceiling of each M: the median clock (CLK) of its uncapped store points;
- the anchor of each M: its anchor's clock (FA-only alone at the cap: what a what-if anchors on).

Both need points: a fit without a capped or without an uncapped store point is an error.

The MoE kernel's own law (:func:`fit_moe_clock_law`, :class:`xsim.moe.clocked.MoEClockLaw`) is fitted the
same way on experiment "moe", kind "duty" (``hwkernels.moe_duty``): per (config, schedule) the local-Combine
kernel alone (the anchor) and with idle gaps of ``gap_ratio`` kernel lengths; the ceilings per config.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict

import numpy as np

from xsim.attention.clock import ClockLaw
from xsim.moe.clocked import MoEClockLaw

TOP_CLOCK_BAND = 0.99


class PowerFitError(ValueError):
    """Duty records that cannot give a clock law (says what is missing)."""


def _point(r) -> tuple[float, float, float]:
    return r.stat("busy_fraction", "median"), r.stat("run_clock_mhz", "median"), r.stat("smi_clock_mhz", "median")


def _fit(groups: dict, top: float, what: str) -> tuple[float, dict, dict]:
    """(beta, {key: uncapped gap points' clocks}, {key: anchor clock}) of ``groups``: key -> (anchor point
    or None, gap points), a point (busy fraction, CLK, nvidia-smi clock), capped below ``top``; beta by
    least squares through the origin over every key's capped gap points."""
    xs, ys, free, anchors = [], [], {}, {}
    for key, (anchor, gaps) in groups.items():
        free[key] = [f for (_, f, smi) in gaps if smi >= TOP_CLOCK_BAND * top]
        if anchor is None:
            continue
        u0, f0, _ = anchor
        anchors[key] = f0
        for u, f, smi in gaps:
            if smi < TOP_CLOCK_BAND * top:
                xs.append(math.log(u0 / u))
                ys.append(math.log(f / f0))
    if not xs:
        raise PowerFitError(f"no power-capped {what} point beside an anchor (gap_kind none) to fit beta on")
    if not any(free.values()):
        raise PowerFitError(f"no {what} point under the cap (nvidia-smi at the top clock) to read a ceiling from")
    x, y = np.asarray(xs), np.asarray(ys)
    return float(x @ y / (x @ x)), free, anchors


def _points(rs, experiment: str, key, size, fitted: str) -> tuple[dict, float]:
    """(key -> (anchor, [gap points of kind ``fitted``]), the top nvidia-smi clock of every point) of the
    duty records of ``experiment`` with a finite, positive busy fraction and clocks. ``key(r)`` groups;
    a gap is (``gap_kind``, ``size(r)``), the latest record of one gap counts; the anchor is ("none", 0)."""
    groups: dict = defaultdict(dict)
    for r in rs.records:
        if r.experiment == experiment and r.kind == "duty":
            point = _point(r)
            if all(math.isfinite(v) and v > 0 for v in point):
                groups[key(r)][(r.params.get("gap_kind"), size(r))] = point
    if not groups:
        return {}, 0.0
    top = max(smi for g in groups.values() for (_, _, smi) in g.values())
    return {k: (g.get(("none", 0)), [v for (kind, n), v in g.items() if kind == fitted and n > 0])
            for k, g in sorted(groups.items())}, top


def fit_clock_law(rs, source: str = "") -> ClockLaw:
    groups, top = _points(rs, "power", lambda r: int(r.params["seq_len"]),
                          lambda r: int(r.params.get("gap_units", 0)), "store")
    if not groups:
        raise PowerFitError("no duty records (experiment power, kind duty) with busy fraction and clocks")
    beta, free, anchors = _fit(groups, top, "store")
    ceilings = {m: float(np.median(f)) for m, f in free.items() if f}
    return ClockLaw(beta, tuple(sorted(ceilings.items())), source, tuple(sorted(anchors.items())))


def fit_moe_clock_law(rs, source: str = "") -> MoEClockLaw:
    """The MoE kernel's own law (``hwkernels.moe_duty``: experiment "moe", kind "duty"): beta over the
    capped idle-gap points of every (config, schedule) against its own anchor (the kernel alone at the
    cap); each config's ceiling the median CLK of its uncapped points, both schedules."""
    groups, top = _points(rs, "moe", lambda r: (r.params["config"], r.params["schedule"]),
                          lambda r: float(r.params.get("gap_ratio", 0)), "idle")
    if not groups:
        raise PowerFitError("no MoE duty records (experiment moe, kind duty) with busy fraction and clocks")
    beta, free, anchors = _fit(groups, top, "idle-gap")
    pooled = defaultdict(list)
    for (config, _), f in free.items():
        pooled[config] += f
    ceilings = {c: float(np.median(f)) for c, f in pooled.items() if f}
    return MoEClockLaw(beta, tuple(sorted(ceilings.items())), tuple(sorted(anchors.items())), source)


@functools.lru_cache(maxsize=8)
def shipped_clock_law(platform: str) -> ClockLaw:
    """The law fitted on a platform's shipped power records (PowerFitError: none, or no law in them)."""
    from calibration.records import load_shipped_records

    rs = load_shipped_records("power", platform)
    if rs is None:
        raise PowerFitError(f"no shipped power records (experiment power) for {platform}")
    return _fit_on(rs)


def _fit_on(rs) -> ClockLaw:
    """The law of the power records in ``rs``, its source the files they came from."""
    return fit_clock_law(rs, _sources(rs, "power"))


def _ours(rs, experiment: str, kind: str | None) -> list:
    return [r for r in rs.records if r.experiment == experiment and kind in (None, r.kind)]


def _sources(rs, experiment: str, kind: str | None = None) -> str:
    return ", ".join(sorted({r.source for r in _ours(rs, experiment, kind)}))


def _law_for(rs, platform: str, experiment: str, kind: str | None, fit, without: str):
    """(law, notes): fitted on the records of ``experiment`` (and ``kind``, None: any) in ``rs``, else on
    the platform's shipped ones; None and a note ending in ``without`` where there are none or they give
    no law."""
    from calibration.records import load_shipped_records

    source = rs if _ours(rs, experiment, kind) else load_shipped_records(experiment, platform)
    if source is None or not _ours(source, experiment, kind):
        what = f"experiment {experiment}" + (f", kind {kind}" if kind else "")
        return None, [f"no duty records ({what}) for {platform}: {without}"]
    try:
        return fit(source, _sources(source, experiment, kind)), []
    except PowerFitError as exc:
        return None, [f"no clock law ({exc}): {without}"]


def clock_law_for(rs, platform: str) -> tuple[ClockLaw | None, list[str]]:
    """FA's law (:func:`fit_clock_law`) by :func:`_law_for`; its notes say every kernel runs at FA-only's clock."""
    law, notes = _law_for(rs, platform, "power", None, fit_clock_law, "every kernel at FA-only's clock")
    return law, [f"fa-a2a: {n}" for n in notes]


def moe_clock_law_for(rs, platform: str) -> tuple[MoEClockLaw | None, list[str]]:
    """The MoE kernel's law (:func:`fit_moe_clock_law`, duty records of ``hwkernels.moe_duty``) by
    :func:`_law_for`; its notes say the steady-state records are predicted at one clock."""
    law, notes = _law_for(rs, platform, "moe", "duty", fit_moe_clock_law,
                          "steady-state kernel records predicted at one clock (python -m hwkernels.moe_duty measures the law)")
    return law, [f"moe: {n}" for n in notes]
