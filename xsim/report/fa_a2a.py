"""The fa-a2a experiment's numbers: the paper's Table 3 and Fig. 11 for our hardware.

Records (experiment "fa-a2a", one per variant and M; ``hwkernels/fa.py`` writes them) are
grouped into series by tile shape and destination, and within a series by sequence length M.
Per series the Q-loop gap G_Qloop(M) = fixed + sigma ceil(M / b_n) is fitted once on the
FA-only records' per-tile Q-loop medians; then, with the one calibrated platform, both models
predict every point: the closed form (:mod:`xsim.attention.predict`) and the DES (the
``fa_a2a`` builder). Both add their predicted residual to the measured FA-only time (the
compute side is measured, as in the paper's Fig. 11). Times are medians of ``kernel_us``.

``fused_vs_cc_prediction_mape`` (post hoc, not a target) compares the measured fused time with
each model's completion-coupled prediction: whether the fused kernel behaves as if coupled.

The measured threshold is the smallest swept M from which on every E_res = T_fused - T_FA is at
the issue floor: at most the floor plus the paper's +-2 % DVFS band of T_FA. The floor is the
backpressure-free issue cost of the kernel itself: its smallest median per-tile issue span
(the profile's T_iss0 where no span was recorded) times the waves that carry remote tiles.

Each model's threshold is the same rule applied to its own predicted residual, with its own floor
(the profile's T_iss0 times the remote waves): eq. 20's M_ub* has no load gate, so on a link whose
backlog holds the next Q-loop's loads (the host link) the two can disagree, and the DES's
threshold (``m_ub_star_predicted_des``) is the prediction the gated platform makes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from calibration.fidelity import mape_percent
from calibration.records import RecordSet
from xsim.attention.predict import FaA2aPrediction, paced_residual_us, predict
from xsim.attention.qloop import QLoop, fit_qloop
from xsim.attention.shape import AttentionShape
from xsim.builders import fa_a2a as builder
from xsim.des import simulate
from xsim.params import resolve
from xsim.platform import Platform
from xsim.spread import spread_cv

KINDS = ("fa-only", "sdpa-cudnn", "a2a-store", "a2a-ce", "serial", "fused", "fused-paced", "cc")
SERIES_KEYS = ("head_dim", "block_m", "block_n", "sp", "destination")
MODELS = ("closed-form", "des")
DVFS_BAND = 0.02              # the paper's +-2 % envelope (Fig. 11)
DES_REPLAYS = 3
TARGETS = {"fa_vs_cudnn_min": (">=", 0.80), "fused_over_fa_above_threshold": ("<=", 1.02),
           "hiding_min_above_threshold": (">=", 0.95), "fused_time_mape": ("<=", 5.0),
           "cc_time_mape": ("<=", 10.0)}


@dataclass
class Point:
    """One sequence length of one series: what was measured and what each model predicts."""

    seq_len: int
    shape: AttentionShape
    measured: dict                      # kind -> median kernel_us
    qloop_us: float = math.nan          # FA-only median per-tile Q-loop time
    qloop_cv: float = math.nan          # FA-only per-tile Q-loop spread (coefficient of variation)
    issue_span_us: float = math.nan     # fused median per-tile issue span
    closed_form: FaA2aPrediction | None = None
    predicted: dict = field(default_factory=dict)   # model -> {"fused_us", "cc_us", "e_res_us", "e_cc_us"}
    floor_us: float = math.nan
    floor_predicted_us: float = math.nan   # the models' issue floor: T_iss0 x remote waves
    pace: int = 0                       # fused-paced: the record's row chunks per tile
    where: list = field(default_factory=list)

    def get(self, kind: str) -> float:
        return self.measured.get(kind, math.nan)

    @property
    def e_res_us(self) -> float:
        return self.get("fused") - self.get("fa-only")

    @property
    def e_cc_us(self) -> float:
        return self.get("cc") - self.get("fa-only")

    @property
    def hiding(self) -> float:
        """Eq. 21: H = 1 - (T_fused - T_FA) / (T_serial - T_FA) (NaN if serial is not slower)."""
        exposed = self.get("serial") - self.get("fa-only")
        return 1.0 - self.e_res_us / exposed if exposed > 0 else math.nan

    @property
    def paced_over_fa(self) -> float:
        """fused-paced (stores spread over the next Q-loop, hwkernels) over FA-only (NaN if absent)."""
        return self.get("fused-paced") / self.get("fa-only")

    @property
    def paced_hiding(self) -> float:
        """Eq. 21 with the fused-paced kernel in place of fused."""
        exposed = self.get("serial") - self.get("fa-only")
        return 1.0 - (self.get("fused-paced") - self.get("fa-only")) / exposed if exposed > 0 else math.nan

    @property
    def speedup(self) -> float:
        return self.get("serial") / self.get("fused")

    @property
    def fused_over_fa(self) -> float:
        return self.get("fused") / self.get("fa-only")

    @property
    def fa_vs_cudnn(self) -> float:
        """cuDNN time over ours: >= 1 means our FA-only is at least as fast."""
        return self.get("sdpa-cudnn") / self.get("fa-only")


@dataclass
class Series:
    key: dict
    points: list[Point]
    qloop: QLoop | None
    summary: dict = field(default_factory=dict)


@dataclass
class FaA2aReport:
    platform: Platform
    series: list[Series]
    engine: str | None
    summary: dict
    notes: list[str]


def _shape(params) -> AttentionShape:
    return AttentionShape(seq_len=int(params["seq_len"]), batch=int(params["batch"]), heads=int(params["heads"]),
                          sp=int(params["sp"]), head_dim=int(params["head_dim"]), block_m=int(params["block_m"]),
                          block_n=int(params["block_n"]), producers=int(params["producers"]))


def column(record) -> str:
    """The measured column of a record: its kind, except that the completion-coupled kind "cc"
    is split by its fence: "cc" is the system-scope fence (FA_CONTRACT.md's counterfactual),
    "cc-<fence>" any other (e.g. a release atomic)."""
    fence = record.params.get("fence")
    if record.kind == "cc" and fence not in (None, "asm"):
        return f"cc-{fence}"
    return record.kind


def collect(rs: RecordSet, notes: list[str]) -> dict:
    """Series key -> {M: Point}; the last record of a (series, M, kind) wins (noted)."""
    series: dict = defaultdict(dict)
    for r in rs.select("fa-a2a"):
        if r.kind not in KINDS:
            notes.append(f"{r.where}: unknown fa-a2a kind {r.kind!r} left out")
            continue
        key = tuple(r.params.get(k) for k in SERIES_KEYS)
        m = int(r.params["seq_len"])
        kind = column(r)
        point = series[key].get(m)
        if point is None:
            point = series[key][m] = Point(m, _shape(r.params), {})
        elif kind in point.measured:
            notes.append(f"{r.where}: repeats {kind} at M = {m}; the later record is used")
        point.measured[kind] = r.stat("kernel_us", "median")
        point.where.append(r.where)
        if r.kind == "fa-only":
            point.qloop_us = r.stat("qloop_us", "median")
            point.qloop_cv = spread_cv(r.stat("qloop_us", "p10"), r.stat("qloop_us", "p90"), r.stat("qloop_us", "mean"))
        if r.kind == "fused-paced":
            if r.params.get("pace_spread", True) and r.params.get("tile_order", "remote-first") == "remote-first":
                point.pace = int(r.params.get("pace_chunks", builder.PARAMS["pace"].default))
            else:
                notes.append(f"{r.where}: fused-paced with consecutive chunks or the default order is not modeled")
        if r.kind == "fused":
            point.issue_span_us = r.stat("issue_span_us", "median")
            point.shape = _shape(r.params)
    return series


def _des_residuals(p: Point, qloop: QLoop, platform: Platform, destination: str, engine: str) -> dict:
    out = {}
    paced = ("fused-paced",) if p.pace else ()
    for variant in ("fused", "cc") + paced:
        s = p.shape
        params = resolve(builder.PARAMS, {
            "variant": variant, "seq_len": s.seq_len, "batch": s.batch, "heads": s.heads, "sp": s.sp,
            "head_dim": s.head_dim, "block_m": s.block_m, "block_n": s.block_n, "producers": s.producers,
            "destination": destination, "sigma_us_per_kv_tile": qloop.sigma_us_per_kv_tile,
            "qloop_fixed_us": qloop.fixed_us, "qloop_cv": qloop.cv, "replays": DES_REPLAYS, "pace": p.pace or 1},
            "fa-a2a point")
        result = simulate(builder.build(params, platform), engine=engine, trace=False)
        out[variant] = builder.summarize(result, params)["e_res_us"]
    return out


def predict_point(p: Point, qloop: QLoop, platform: Platform, destination: str, engine: str | None) -> None:
    t_fa = p.get("fa-only")
    cf = p.closed_form = predict(p.shape, qloop, platform, destination)
    p.predicted["closed-form"] = {"e_res_us": cf.e_res_us, "e_cc_us": cf.e_cc_us,
                                  "fused_us": t_fa + cf.e_res_us, "cc_us": t_fa + cf.e_cc_us,
                                  "paced_us": t_fa + paced_residual_us(p.shape, qloop, platform, p.pace, destination)
                                  if p.pace else math.nan}
    if engine is not None:
        des = _des_residuals(p, qloop, platform, destination, engine)
        p.predicted["des"] = {"e_res_us": des["fused"], "e_cc_us": des["cc"],
                              "fused_us": t_fa + des["fused"], "cc_us": t_fa + des["cc"],
                              "paced_us": t_fa + des.get("fused-paced", math.nan)}
    per_tile = p.issue_span_us
    p.floor_us = cf.remote_waves * (per_tile if math.isfinite(per_tile) else cf.t_iss0_us)
    p.floor_predicted_us = cf.remote_waves * cf.t_iss0_us


def _threshold(points: list[Point], residual, floor) -> float | None:
    """The smallest swept M from which on every residual(p) is within floor(p) + DVFS band of
    T_FA (None: never); points where either is unknown are skipped."""
    found = None
    for p in sorted(points, key=lambda q: q.seq_len, reverse=True):
        e_res, at = residual(p), floor(p)
        if not (math.isfinite(e_res) and math.isfinite(at)):
            continue
        if e_res > at + DVFS_BAND * p.get("fa-only"):
            break
        found = p.seq_len
    return found


def measured_threshold(points: list[Point], kind: str = "fused") -> float | None:
    """The measured threshold; kind "fused-paced" takes that kernel's residual in place of fused's."""
    return _threshold(points, lambda p: p.get(kind) - p.get("fa-only"), lambda p: p.floor_us)


def predicted_threshold(points: list[Point], model: str, kind: str = "fused") -> float | None:
    """A model's threshold: the measured rule on its predicted residual and its own floor."""
    key = {"fused": "fused_us", "fused-paced": "paced_us"}[kind]
    return _threshold(points, lambda p: p.predicted.get(model, {}).get(key, math.nan) - p.get("fa-only"),
                      lambda p: p.floor_predicted_us)


def _mae(predicted, measured) -> float | None:
    """Mean absolute error of the residuals in microseconds (time MAPEs hide them at long M)."""
    pairs = [(a, b) for a, b in zip(predicted, measured) if math.isfinite(a) and math.isfinite(b)]
    return float(np.mean([abs(a - b) for a, b in pairs])) if pairs else None


def _extreme(values, fn):
    vals = [v for v in values if math.isfinite(v)]
    return float(fn(vals)) if vals else None


def summarize_series(s: Series, models: list[str]) -> dict:
    pts = s.points
    m_ub = _extreme([p.closed_form.m_ub_star_tokens for p in pts if p.closed_form], max)
    above = [p for p in pts if m_ub is not None and p.seq_len >= 2 * m_ub]
    errors = {}
    for model in models:
        have = [p for p in pts if model in p.predicted]
        errors[model] = {
            "fused_time_mape": mape_percent([p.predicted[model]["fused_us"] for p in have],
                                            [p.get("fused") for p in have]),
            "cc_time_mape": mape_percent([p.predicted[model]["cc_us"] for p in have], [p.get("cc") for p in have]),
            "e_res_mae_us": _mae([p.predicted[model]["e_res_us"] for p in have], [p.e_res_us for p in have]),
            "e_cc_mae_us": _mae([p.predicted[model]["e_cc_us"] for p in have], [p.e_cc_us for p in have]),
            "fused_vs_cc_prediction_mape": mape_percent([p.predicted[model]["cc_us"] for p in have],
                                                        [p.get("fused") for p in have]),
            "paced_time_mape": mape_percent([p.predicted[model]["paced_us"] for p in have],
                                            [p.get("fused-paced") for p in have]),
            "n_fused": sum(math.isfinite(p.get("fused")) for p in have),
            "n_cc": sum(math.isfinite(p.get("cc")) for p in have)}
    return {
        **dict(s.key), "seq_lens": [p.seq_len for p in pts],
        "qloop_fit": s.qloop.to_dict() if s.qloop else None,
        "g_star_us": _extreme([p.closed_form.g_star_us for p in pts if p.closed_form], max),
        "m_ub_star_predicted": m_ub, "m_ub_star_measured": measured_threshold(pts),
        "speedup_max": _extreme([p.speedup for p in pts], max),
        "fused_over_fa_above_threshold": _extreme([p.fused_over_fa for p in above], max),
        "hiding_min_above_threshold": _extreme([p.hiding for p in above], min),
        "paced_over_fa_above_threshold": _extreme([p.paced_over_fa for p in above], max),
        "paced_hiding_min_above_threshold": _extreme([p.paced_hiding for p in above], min),
        "m_ub_star_measured_paced": measured_threshold(pts, "fused-paced")
        if any(math.isfinite(p.get("fused-paced")) for p in pts) else None,
        "n_above_threshold": len(above),
        "m_ub_star_predicted_by_model": {m: predicted_threshold(pts, m) for m in models},
        "m_ub_star_predicted_by_model_paced": {m: predicted_threshold(pts, m, "fused-paced") for m in models}
        if any(math.isfinite(p.get("fused-paced")) for p in pts) else None,
        "fused_over_cc_measured": _extreme([p.get("fused") / p.get("cc") for p in pts], np.median),
        "fa_vs_cudnn_min": _extreme([p.fa_vs_cudnn for p in pts], min) if s.key["head_dim"] == 128 else None,
        "errors": errors,               # MAPEs in percent, MAEs in us
    }


def _check(value, op: str, bound: float) -> bool | None:
    if value is None or not math.isfinite(value):
        return None
    return value >= bound if op == ">=" else value <= bound


def targets(head: dict) -> list[dict]:
    """Every target of the issue with its value and pass (True/False, None: nothing to test)."""
    out = [{"target": k, "value": head.get(k), "bound": f"{op} {b:g}", "pass": _check(head.get(k), op, b)}
           for k, (op, b) in TARGETS.items()]
    meas = head.get("m_ub_star_measured")
    out.append(_threshold_target("m_ub_star_measured", meas, head.get("m_ub_star_predicted")))
    if head.get("headline_model") == "des":
        out.append(_threshold_target("m_ub_star_measured_vs_des", meas, head.get("m_ub_star_predicted_des")))
    return out


def _threshold_target(name: str, meas, pred) -> dict:
    """The measured threshold at or below the predicted one and within 2x of it."""
    ok = None if pred is None or meas is None else (meas <= pred and meas >= pred / 2)
    if pred is not None and meas is None:
        ok = False
    bound = "n/a" if pred is None else f"<= {pred:.0f} and >= {pred / 2:.0f}"
    return {"target": name, "value": meas, "bound": bound, "pass": ok}


def build(rs: RecordSet, platform: Platform, engine: str | None = None) -> FaA2aReport:
    """Every fa-a2a series beside both predictions, with the Table 3 / Fig. 11 summary."""
    notes: list[str] = []
    series = []
    for key, by_m in sorted(collect(rs, notes).items(), key=lambda kv: str(kv[0])):
        pts = [by_m[m] for m in sorted(by_m)]
        named = dict(zip(SERIES_KEYS, key))
        fa = [p for p in pts if math.isfinite(p.qloop_us)]
        try:
            qloop = fit_qloop([p.seq_len for p in fa], [p.qloop_us for p in fa], int(named["block_n"]),
                              [p.qloop_cv for p in fa])
        except ValueError as exc:
            notes.append(f"series {named}: no predictions ({exc})")
            qloop = None
        if qloop is not None:
            for p in pts:
                if math.isfinite(p.get("fa-only")):
                    predict_point(p, qloop, platform, named["destination"], engine)
        series.append(Series(named, pts, qloop))
    models = ["closed-form"] + (["des"] if engine else [])
    for s in series:
        s.summary = summarize_series(s, models)
    head = _headline(series)
    headline_model = "des" if engine else "closed-form"
    summary = {"experiment": "fa-a2a", "platform": platform.name, "headline_model": headline_model,
               "des_engine": engine, "n_points": sum(len(s.points) for s in series)}
    if head is not None:
        h = head.summary
        errs = h["errors"][headline_model]
        summary.update({k: h[k] for k in ("speedup_max", "m_ub_star_predicted", "m_ub_star_measured",
                                          "fused_over_fa_above_threshold", "hiding_min_above_threshold",
                                          "paced_over_fa_above_threshold", "paced_hiding_min_above_threshold",
                                          "m_ub_star_measured_paced")})
        summary.update(fused_time_mape=errs["fused_time_mape"], cc_time_mape=errs["cc_time_mape"],
                       paced_time_mape=errs["paced_time_mape"],
                       fa_vs_cudnn_min=_extreme([s.summary["fa_vs_cudnn_min"] for s in series
                                                 if s.summary["fa_vs_cudnn_min"] is not None], min),
                       headline_series=dict(head.key))
        if engine:
            paced = h["m_ub_star_predicted_by_model_paced"] or {}
            summary.update(m_ub_star_predicted_des=h["m_ub_star_predicted_by_model"]["des"],
                           m_ub_star_predicted_des_paced=paced.get("des"))
        summary["targets"] = targets(summary)
    summary["series"] = [s.summary for s in series]
    return FaA2aReport(platform, series, engine, summary, notes)


def _headline(series: list[Series]) -> Series | None:
    """The d = 128 series with the most points (else any series with the most points)."""
    if not series:
        return None
    return max(series, key=lambda s: (s.key["head_dim"] == 128, len(s.points)))


HEADLINE_KEYS = ("speedup_max", "m_ub_star_predicted", "m_ub_star_measured", "fused_over_fa_above_threshold",
                 "hiding_min_above_threshold", "fused_time_mape", "cc_time_mape", "fa_vs_cudnn_min",
                 "paced_time_mape", "paced_over_fa_above_threshold", "m_ub_star_measured_paced",
                 "m_ub_star_predicted_des", "m_ub_star_predicted_des_paced")
