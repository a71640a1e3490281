"""Predicted vs measured for micro records: closed-form predictions and error summaries.

A prediction uses one platform for every point (calibrate once, then predict): the closed
form of :mod:`xsim.builders.microbench` (eqs. 3-7 with the capacity floor). The DES
predictions are added by the report (:mod:`xsim.report.micro`), which needs the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibration.records import Record
from xsim.builders import microbench
from xsim.closedform import isolated_burst, steady_state
from xsim.platform import Platform
from xsim.units import drain_time_us


@dataclass(frozen=True)
class Comparison:
    """One record beside its closed-form prediction (NaN where a quantity does not apply)."""

    record: Record
    issue_mean_us: float
    issue_median_us: float
    issue_p90_us: float
    period_mean_us: float
    period_median_us: float
    predicted_issue_us: float
    predicted_period_us: float

    @property
    def aligned(self) -> bool:
        return bool(self.record.params["aligned"])

    @property
    def kind(self) -> str:
        return self.record.kind


def effective_gap_us(record: Record, platform: Platform) -> float:
    """The producer-side time without remote stores per burst: the spun gap, the kernel's loop
    cost, and the grid barrier when aligned (both calibrated once, per platform)."""
    p = record.params
    barrier = platform.barrier_us(float(p["gap_us"])) if p["aligned"] else 0.0
    return float(p["gap_us"]) + platform.burst_overhead_us + barrier


def closed_form(record: Record, platform: Platform) -> dict:
    """The paper's closed form for a record's point with G the effective gap: ``issue_us``
    (eq. 3, or eq. 7 for isolated bursts) and, for periodic points, ``period_us`` (eq. 2)."""
    p = record.params
    params = {"mode": "isolated" if record.kind == "isolated" else "periodic", "producers": int(p["producers"]),
              "burst_bytes": float(p["burst_bytes"]), "gap_us": effective_gap_us(record, platform),
              "peers": 1, "coupling": "xstage"}
    pred = dict(microbench.predict(params, platform))
    if "period_us" in pred:  # the measured period is start to start: issue + the spun gap + costs
        pred["period_us"] = pred["issue_us"] + params["gap_us"]
    return pred


def mode_aware(record: Record, platform: Platform) -> dict:
    """The same fluid quantities, applied per run mode as the kernels behave (docs/calibration.md):

    - aligned (and isolated): the grid barrier completes only once the previous burst has
      drained, so every burst meets an empty X-Stage: issue is eq. 7, ``max(T_iss0, (V - Q)/R)``,
      and the period is ``max(T_iss + G_eff, V/R)``;
    - free-running: producers drift out of phase and never present the whole V at once, so
      the capacity floor does not apply: issue is eq. 3, ``max(T_iss0, V/R - G_eff)``, and the
      period eq. 2, ``T_iss + G_eff``.
    """
    p = record.params
    k, b = int(p["producers"]), float(p["burst_bytes"])
    volume, r = k * b, platform.drain_rate_for(k)
    t0 = platform.t_iss0_us(k, b)
    gap = effective_gap_us(record, platform)
    if record.kind == "isolated" or p["aligned"]:
        issue = isolated_burst(volume, t0, r, platform.capacity_bytes(k)).t_issue_isolated_us
        period = max(issue + gap, drain_time_us(volume, r))
    else:
        issue = steady_state(volume, gap, t0, r).t_issue_us
        period = issue + gap
    out = {"issue_us": issue}
    if record.kind != "isolated":
        out["period_us"] = period
    return out


MODELS = {"fluid": closed_form, "mode-aware": mode_aware}


def compare(records, platform: Platform, model: str = "fluid") -> list[Comparison]:
    predict = MODELS[model]
    out = []
    for r in records:
        pred = predict(r, platform)
        out.append(Comparison(r, r.stat("issue_us", "mean"), r.stat("issue_us", "median"), r.stat("issue_us", "p90"),
                              r.stat("period_us", "mean") if r.kind != "isolated" else float("nan"),
                              r.stat("period_us", "median") if r.kind != "isolated" else float("nan"),
                              float(pred["issue_us"]), float(pred.get("period_us", float("nan")))))
    return out


def mape_percent(predicted, measured) -> float:
    """Mean absolute percentage error over the finite pairs (NaN when there are none)."""
    p, m = np.asarray(predicted, float), np.asarray(measured, float)
    ok = np.isfinite(p) & np.isfinite(m) & (m > 0)
    return float(np.mean(np.abs(p[ok] - m[ok]) / m[ok]) * 100.0) if ok.any() else float("nan")


def error_summary(comparisons: list[Comparison]) -> dict:
    """Period MAPE (periodic points) and mean issue MAPE (all points), with their counts."""
    periodic = [c for c in comparisons if c.kind == "periodic"]
    return {
        "period_mape": mape_percent([c.predicted_period_us for c in periodic], [c.period_mean_us for c in periodic]),
        "period_median_mape": mape_percent([c.predicted_period_us for c in periodic],
                                           [c.period_median_us for c in periodic]),
        "issue_mean_mape": mape_percent([c.predicted_issue_us for c in comparisons],
                                        [c.issue_mean_us for c in comparisons]),
        "issue_median_mape": mape_percent([c.predicted_issue_us for c in comparisons],
                                          [c.issue_median_us for c in comparisons]),
        "n_period_points": len(periodic),
        "n_points": len(comparisons),
    }


def split_summary(comparisons: list[Comparison]) -> dict:
    """Errors overall, then aligned and free-running apart."""
    return {
        "all": error_summary(comparisons),
        "aligned": error_summary([c for c in comparisons if c.aligned]),
        "free_running": error_summary([c for c in comparisons if not c.aligned]),
    }
