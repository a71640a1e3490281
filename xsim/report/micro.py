"""The micro experiment's numbers: every store record beside its predictions, and the summary.

Predictions come from one platform (calibrate once, then predict): the paper's fluid closed
form, the mode-aware closed form (:mod:`calibration.fidelity`) and the DES (where it ran).
Errors are reported on the held-out points of the calibration split (``calibration.dataset``)
and, separately, on the training points; aligned and free-running apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calibration.dataset import choose_mechanism, split, store_records
from calibration.fidelity import MODELS, mape_percent
from calibration.records import RecordSet
from calibration.tails import measured_issue_max
from xsim.platform import REFERENCE_BURST_BYTES, REFERENCE_PRODUCERS, Platform
from xsim.simulate_point import DEFAULT_TIMEOUT_S, default_engine, micro_params, simulate_point

HEADLINE_MODELS = ("des", "mode-aware")  # the DES where it ran, else the closed form


@dataclass
class Row:
    """One store record: what was run, what was measured, what each model predicts."""

    kind: str
    producers: int
    burst_bytes: int
    gap_us: float
    aligned: bool
    heldout: bool
    measured: dict            # issue_mean/median/p90, period_mean/median/p90 (us)
    predicted: dict = field(default_factory=dict)   # model -> {"issue_us", "period_us"}
    where: str = ""

    @property
    def volume_bytes(self) -> int:
        return self.producers * self.burst_bytes


@dataclass
class MicroReport:
    platform: Platform
    mechanism: str
    rows: list[Row]
    engine: str | None
    des_skipped: int
    summary: dict


def _measured(r, trace_tails: dict | None = None) -> dict:
    out = {f"issue_{k}": r.stat("issue_us", k) for k in ("mean", "median", "p90")}
    out["issue_max"], out["issue_max_from"] = measured_issue_max(r, trace_tails)
    out.update({f"period_{k}": r.stat("period_us", k) if r.kind != "isolated" else float("nan")
                for k in ("mean", "median", "p90")})
    out["burst_issue_median"] = r.stat("burst_issue_us", "median")
    return out


def des_wanted(row: Row) -> bool:
    """DES runs for the held-out points and the figure's main series (K=132, B=32 KB; K=132 isolated)."""
    main = row.producers == REFERENCE_PRODUCERS and (row.kind == "isolated" or row.burst_bytes == REFERENCE_BURST_BYTES)
    return row.heldout or main


def _des(row: Row, record, platform: Platform, engine: str, timeout_s: float | None) -> dict | None:
    p = record.params
    params = micro_params("isolated" if row.kind == "isolated" else "periodic", row.producers, row.burst_bytes,
                          row.gap_us, row.aligned, int(p.get("bursts", 64)), int(p.get("warmup_bursts", 16)))
    s = simulate_point(params, platform, engine, timeout_s)
    if s is None:
        return None
    out = {"issue_us": s["issue_us"]["mean"], "issue_median_us": s["issue_us"]["median"],
           "issue_p90_us": s["issue_us"]["p90"], "issue_max_us": s["issue_max_us"]["mean"]}
    if row.kind != "isolated":
        out["period_us"] = s["period_us"]["mean"]
    return out


def _tail_mapes(rows: list[Row], model: str) -> dict:
    """p90 issue MAPE over the rows, max-over-CTA issue MAPE over their aligned rows with a measured max.

    Only a model that predicts a distribution (the DES) has tails; NaN for the closed forms."""
    pred = lambda r, key: r.predicted[model].get(key, np.nan)  # noqa: E731
    tails = [r for r in rows if r.aligned and np.isfinite(r.measured.get("issue_max", np.nan))]
    return {"issue_p90_mape": mape_percent([pred(r, "issue_p90_us") for r in rows],
                                           [r.measured["issue_p90"] for r in rows]),
            "issue_max_mape": mape_percent([pred(r, "issue_max_us") for r in tails],
                                           [r.measured["issue_max"] for r in tails]),
            "n_max_points": len(tails)}


def _errors(rows: list[Row], model: str) -> dict:
    out = {}
    for mode, keep in (("aligned", True), ("free_running", False)):
        sub = [r for r in rows if r.aligned == keep and model in r.predicted]
        per = [r for r in sub if r.kind == "periodic"]
        out[mode] = {
            "period_mape": mape_percent([r.predicted[model].get("period_us", np.nan) for r in per],
                                        [r.measured["period_mean"] for r in per]),
            "issue_mean_mape": mape_percent([r.predicted[model]["issue_us"] for r in sub],
                                            [r.measured["issue_mean"] for r in sub]),
            "issue_median_mape": mape_percent([r.predicted[model]["issue_us"] for r in sub],
                                              [r.measured["issue_median"] for r in sub]),
            "n_points": len(sub),
            **_tail_mapes(sub, model),
        }
    both = [r for r in rows if model in r.predicted]
    per = [r for r in both if r.kind == "periodic"]
    out["all"] = {"period_mape": mape_percent([r.predicted[model].get("period_us", np.nan) for r in per],
                                              [r.measured["period_mean"] for r in per]),
                  "issue_mean_mape": mape_percent([r.predicted[model]["issue_us"] for r in both],
                                                  [r.measured["issue_mean"] for r in both]),
                  "n_points": len(both), **_tail_mapes(both, model)}
    return out


def _max_sources(rows: list[Row]) -> dict:
    """How many rows have a measured max-over-CTA issue, from records' stats or from traces."""
    out = {"record": 0, "trace": 0, "none": 0}
    for r in rows:
        out[r.measured["issue_max_from"]] += 1
    return out


def _ce_ratio(rs: RecordSet, platform: Platform) -> float | None:
    """Best store mechanism's drain over the copy engine's best rate (from the profile's fit)."""
    pv = platform.provenance or {}
    drains = pv.get("mechanisms_drain_rate_gbps") or {}
    ce = [float(r.data["gbps"]) for r in rs.select("micro", "ce-copy") if "gbps" in r.data]
    if not drains or not ce:
        return None
    return max(drains.values()) / max(ce)


def _time_range(records) -> list[str] | None:
    """First and last ``time_utc`` of the records (None when they carry none)."""
    times = sorted(str(r.data["time_utc"]) for r in records if r.data.get("time_utc"))
    return [times[0], times[-1]] if times else None


def heldout_errors(rs: RecordSet, platform: Platform, trace_tails: dict | None = None,
                   engine: str | None = None) -> dict:
    """The DES's errors on the held-out points only (what ``xsim calibrate`` records). No time
    limit: a point skipped for a slow machine would change the profile's bytes."""
    rep = build(rs, platform, des=True, engine=engine, trace_tails=trace_tails, des_for="heldout",
                des_timeout_s=None)
    return rep.summary["heldout_errors_percent"]["des"]


def build(rs: RecordSet, platform: Platform, des: bool = True, engine: str | None = None,
          trace_tails: dict | None = None, des_for: str = "report",
          des_timeout_s: float | None = DEFAULT_TIMEOUT_S, holdout: str = "split") -> MicroReport:
    """Every store record of the profile's mechanism beside its predictions, plus the summary.

    ``trace_tails`` (:func:`calibration.tails.load_trace_tails`): measured max-over-CTA issue for
    records that predate ``stats.issue_max_us``. ``holdout``: ``"split"`` holds out the
    calibration split's points (``calibration.dataset.split``); ``"all"`` every record (for records
    the profile's fit never saw)."""
    if holdout not in ("split", "all"):
        raise ValueError(f'"holdout" must be "split" or "all", got {holdout!r}.')
    wanted = (platform.provenance or {}).get("fit", {}).get("mechanism")
    mech = choose_mechanism(rs, wanted if wanted in {r.params.get("mechanism") for r in rs.records} else None)
    recs = store_records(rs, mech)
    sp = split(recs)
    held = {r.where for r in (recs if holdout == "all" else sp.heldout)}
    engine = (engine or default_engine(platform)) if des else None
    rows, skipped = [], 0
    for rec in recs:
        p = rec.params
        row = Row(rec.kind, int(p["producers"]), int(p["burst_bytes"]), float(p["gap_us"]), bool(p["aligned"]),
                  rec.where in held, _measured(rec, trace_tails), where=rec.where)
        for name, predict in MODELS.items():
            row.predicted[name] = predict(rec, platform)
        if des and (row.heldout if des_for == "heldout" else des_wanted(row)):
            result = _des(row, rec, platform, engine, des_timeout_s)
            if result is None:
                skipped += 1
            else:
                row.predicted["des"] = result
        rows.append(row)
    models = list(MODELS) + (["des"] if des else [])
    heldout = [r for r in rows if r.heldout]
    headline = HEADLINE_MODELS[0] if des else HEADLINE_MODELS[1]
    head = _errors(heldout, headline)
    summary = {
        "experiment": "micro",
        "platform": platform.name,
        "mechanism": mech,
        "drain_rate_gbps": platform.drain_rate_gbps,
        "capacity_bytes": platform.capacity_bytes(REFERENCE_PRODUCERS),
        "t_iss0_us": platform.t_iss0_us(REFERENCE_PRODUCERS, REFERENCE_BURST_BYTES),
        "period_mape": head["all"]["period_mape"],
        "issue_mean_mape": head["all"]["issue_mean_mape"],
        "issue_p90_mape": head["all"]["issue_p90_mape"],
        "issue_max_mape": head["all"]["issue_max_mape"],
        "n_issue_max_points": head["all"]["n_max_points"],
        "issue_max_source": _max_sources(heldout),
        "headline_model": headline,
        "ce_ratio": _ce_ratio(rs, platform),
        "n_points": len(rows),
        "n_heldout": len(heldout),
        "split": sp.describe() if holdout == "split" else "held out: every record (--heldout all)",
        "heldout_errors_percent": {m: _errors(heldout, m) for m in models},
        "train_errors_percent": {m: _errors([r for r in rows if not r.heldout], m) for m in models},
        "des_engine": engine,
        "des_points": sum("des" in r.predicted for r in rows),
        "des_timed_out": skipped,
        "link": (rs.platform or {}).get("link"),
        "records_time_utc": _time_range(recs),
    }
    return MicroReport(platform, mech, rows, engine, skipped, summary)
