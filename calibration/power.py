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
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict

import numpy as np

from xsim.attention.clock import ClockLaw

TOP_CLOCK_BAND = 0.99


class PowerFitError(ValueError):
    """Duty records that cannot give a clock law (says what is missing)."""


def _point(r) -> tuple[float, float, float]:
    return r.stat("busy_fraction", "median"), r.stat("run_clock_mhz", "median"), r.stat("smi_clock_mhz", "median")


def fit_clock_law(rs, source: str = "") -> ClockLaw:
    duty = [r for r in rs.records if r.experiment == "power" and r.kind == "duty"]
    groups = defaultdict(dict)
    for r in duty:
        u, f, smi = _point(r)
        if not all(math.isfinite(v) and v > 0 for v in (u, f, smi)):
            continue
        groups[int(r.params["seq_len"])][(r.params.get("gap_kind"), int(r.params.get("gap_units", 0)))] = (u, f, smi)
    if not groups:
        raise PowerFitError("no duty records (experiment power, kind duty) with busy fraction and clocks")
    top = max(smi for g in groups.values() for (_, _, smi) in g.values())
    xs, ys, ceilings, anchors = [], [], {}, {}
    for m, g in sorted(groups.items()):
        anchor = g.get(("none", 0))
        stores = [v for (kind, units), v in g.items() if kind == "store" and units > 0]
        free = [f for (_, f, smi) in stores if smi >= TOP_CLOCK_BAND * top]
        if free:
            ceilings[m] = float(np.median(free))
        if anchor is None:
            continue
        u0, f0, _ = anchor
        anchors[m] = f0
        for u, f, smi in stores:
            if smi < TOP_CLOCK_BAND * top:
                xs.append(math.log(u0 / u))
                ys.append(math.log(f / f0))
    if not xs:
        raise PowerFitError("no power-capped store point beside an anchor (gap_kind none) to fit beta on")
    if not ceilings:
        raise PowerFitError("no store point under the cap (nvidia-smi at the top clock) to read a ceiling from")
    x, y = np.asarray(xs), np.asarray(ys)
    beta = float(x @ y / (x @ x))
    return ClockLaw(beta, tuple(sorted(ceilings.items())), source, tuple(sorted(anchors.items())))


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
    return fit_clock_law(rs, ", ".join(sorted({r.source for r in rs.records if r.experiment == "power"})))


def clock_law_for(rs, platform: str) -> tuple[ClockLaw | None, list[str]]:
    """(law, notes): fitted on the duty records in ``rs``, else on the platform's shipped power records;
    None and a note where there are none or they give no law."""
    from calibration.records import load_shipped_records

    source = rs if any(r.experiment == "power" for r in rs.records) else load_shipped_records("power", platform)
    if source is None:
        return None, [f"fa-a2a: no duty records (experiment power) for {platform}: every kernel at FA-only's clock"]
    try:
        return _fit_on(source), []
    except PowerFitError as exc:
        return None, [f"fa-a2a: no clock law ({exc}): every kernel at FA-only's clock"]
