"""The fa-a2a experiment's numbers: the paper's Table 3 and Fig. 11 for our hardware.

Records (experiment "fa-a2a", one per variant and M; ``hwkernels/fa.py`` writes them) are
grouped into series by tile shape and destination, and within a series by sequence length M
(:mod:`xsim.report.fa_a2a_points`).
Per series the Q-loop gap G_Qloop(M) = fixed + sigma ceil(M / b_n) is fitted once on the
FA-only records' per-tile Q-loop medians; then, with the one calibrated platform, both models
predict every point: the closed form (:mod:`xsim.attention.predict`) and the DES (the
``fa_a2a`` builder). Both add their predicted residual to the measured FA-only time (the
compute side is measured, as in the paper's Fig. 11). Times are medians of ``kernel_us``.
The thresholds, the models' errors and the targets per series: :mod:`xsim.report.fa_a2a_summary`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from calibration.records import RecordSet
from xsim.attention.clock import ClockLaw, solve
from xsim.attention.clocked import scaled
from xsim.attention.predict import paced_residual_us, predict
from xsim.attention.qloop import QLoop, fit_qloop
from xsim.attention.shape import drain_peers
from xsim.attention.stagger import design_stagger
from xsim.builders import fa_a2a as builder
from xsim.des import simulate
from xsim.params import resolve
from xsim.platform import Platform
from xsim.report.fa_a2a_points import PREDICTED, SERIES_KEYS, Point, Series, collect
from xsim.report.fa_a2a_repeats import key_of, over_runs, series_commits
from xsim.report.fa_a2a_summary import extreme, summarize_series, targets

MODELS = ("closed-form", "des")
DES_REPLAYS = 3


@dataclass
class FaA2aReport:
    platform: Platform
    series: list[Series]
    engine: str | None
    summary: dict
    notes: list[str]


def _des_residual(p: Point, qloop: QLoop, platform: Platform, destination: str, engine: str, variant: str,
                  cc_fence: str | None = None, stagger_us: float = 0.0, scale: float = 1.0) -> float:
    """The DES's residual of ``variant`` over its own FA-only time, every Q-loop ``scale`` times the fit's."""
    s = p.shape
    fence = {} if cc_fence is None else {"cc_fence": cc_fence}
    params = resolve(builder.PARAMS, {
        "variant": variant, "seq_len": s.seq_len, "batch": s.batch, "heads": s.heads, "sp": s.sp,
        "head_dim": s.head_dim, "block_m": s.block_m, "block_n": s.block_n, "producers": s.producers,
        "destination": destination, "sigma_us_per_kv_tile": qloop.sigma_us_per_kv_tile,
        "qloop_fixed_us": qloop.fixed_us, "qloop_cv": qloop.cv, "replays": DES_REPLAYS,
        "pace": p.pace or 1, "stagger_us": stagger_us, **fence}, "fa-a2a point")
    params = scaled(params, scale)
    result = simulate(builder.build(params, platform), engine=engine, trace=False)
    return builder.summarize(result, params)["e_res_us"]


def _des_models(p: Point, qloop: QLoop, platform: Platform, destination: str, engine: str,
                cc_fence: str | None, stagger_us: float, law: ClockLaw | None) -> dict:
    """model -> predicted times: "des" (with the clock law where it and FA-only's clock are known; each
    variant's time and clock solved together, :func:`xsim.attention.clock.solve`) and, beside a law,
    "des-fixed-clock" (every kernel at FA-only's clock, the DES alone)."""
    t_fa, f_fa = p.get("fa-only"), p.clock("fa-only")
    use_law = law is not None and math.isfinite(f_fa)
    fixed, solved = {}, {}
    for variant, name in PREDICTED:
        if variant == "fused-paced" and not p.pace:
            continue
        cache = {}

        def residual(scale, variant=variant, cache=cache):
            if scale not in cache:
                cache[scale] = _des_residual(p, qloop, platform, destination, engine, variant, cc_fence,
                                             stagger_us, scale)
            return cache[scale]
        fixed[name] = (t_fa + residual(1.0), f_fa)
        if use_law:
            solved[name] = solve(law, t_fa, f_fa, p.seq_len, residual)

    def times(got):
        out = {f"{n}_us": t for n, (t, _) in got.items()} | {f"{n}_mhz": f for n, (_, f) in got.items()}
        out.setdefault("paced_us", math.nan)
        return out | {"e_res_us": out["fused_us"] - t_fa, "e_cc_us": out["cc_us"] - t_fa}
    return {"des": times(solved), "des-fixed-clock": times(fixed)} if use_law else {"des": times(fixed)}


def predict_point(p: Point, qloop: QLoop, platform: Platform, destination: str, engine: str | None,
                  cc_fence: str | None = None, stagger_us: float = 0.0, law: ClockLaw | None = None) -> None:
    t_fa = p.get("fa-only")
    cf = p.closed_form = predict(p.shape, qloop, platform, destination)
    p.predicted["closed-form"] = {"e_res_us": cf.e_res_us, "e_cc_us": cf.e_cc_us,
                                  "fused_us": t_fa + cf.e_res_us, "cc_us": t_fa + cf.e_cc_us,
                                  "paced_us": t_fa + paced_residual_us(p.shape, qloop, platform, p.pace, destination)
                                  if p.pace else math.nan}
    if engine is not None:
        p.predicted |= _des_models(p, qloop, platform, destination, engine, cc_fence, stagger_us, law)
        if math.isfinite(p.qloop_wave_cv):   # des-wave: the spread between one wave's programs (at_clock only)
            wave = _des_models(p, replace(qloop, cv=p.qloop_wave_cv), platform, destination, engine,
                               cc_fence, stagger_us, None)
            p.predicted["des-wave"] = wave["des"]
    per_tile = p.issue_span_us
    p.floor_us = cf.remote_waves * (per_tile if math.isfinite(per_tile) else cf.t_iss0_us)
    p.floor_predicted_us = cf.remote_waves * cf.t_iss0_us


def build(rs: RecordSet, platform: Platform, engine: str | None = None, cc_fence: str | None = None,
          repeats: list | None = None, clock_law: ClockLaw | None = None) -> FaA2aReport:
    """Every fa-a2a series beside both predictions, with the Table 3 / Fig. 11 summary; ``cc_fence``
    the DES's cc fence (``fa_a2a`` builder; None: its default); ``repeats`` (file name, records)
    of other runs, whose runs of the headline series the ratio targets are counted over
    (:mod:`xsim.report.fa_a2a_repeats`; None: the shipped run alone); ``clock_law`` the power cap's
    clock law the DES's predictions use (:mod:`xsim.attention.clock`; None: every kernel at FA-only's clock)."""
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
                    predict_point(p, qloop, platform, named["destination"], engine, cc_fence,
                                  float(named["stagger_us"]), clock_law)
        series.append(Series(named, pts, qloop))
    models = ["closed-form"] + (["des"] if engine else [])
    if engine and any("des-fixed-clock" in p.predicted for s in series for p in s.points):
        models.append("des-fixed-clock")
    for s in series:
        s.summary = summarize_series(s, models)
    head = _headline(series, platform)
    headline_model = "des" if engine else "closed-form"
    summary = {"experiment": "fa-a2a", "platform": platform.name, "headline_model": headline_model,
               "des_engine": engine, "n_points": sum(len(s.points) for s in series),
               "cc_fence": (cc_fence or builder.PARAMS["cc_fence"].default) if engine else None,
               "clock_law": clock_law.to_dict() if engine and clock_law is not None else None}
    if head is not None:
        h = head.summary
        errs = h["errors"][headline_model]
        summary.update({k: h[k] for k in ("speedup_max", "m_ub_star_predicted", "m_ub_star_measured",
                                          "fused_over_fa_above_threshold", "hiding_min_above_threshold")})
        paced_s = _paced_series(series, head)
        ps = paced_s.summary
        summary.update({k: ps[k] for k in ("paced_over_fa_above_threshold", "paced_hiding_min_above_threshold",
                                           "m_ub_star_measured_paced")})
        summary.update(fused_time_mape=errs["fused_time_mape"], cc_time_mape=errs["cc_time_mape"],
                       paced_time_mape=ps["errors"][headline_model]["paced_time_mape"],
                       paced_series=dict(paced_s.key),
                       fa_vs_cudnn_min=h["fa_vs_cudnn_min"],
                       fa_vs_cudnn_min_all_series=extreme([s.summary["fa_vs_cudnn_min"] for s in series
                                                           if s.summary["fa_vs_cudnn_min"] is not None], min),
                       headline_series=dict(head.key), stagger_design_us=design_stagger_us(head, platform),
                       clock_source=h["clock_source"], at_clock=h["at_clock"], clock_predicted=h["clock_predicted"])
        if "des-fixed-clock" in h["errors"]:
            fixed = h["errors"]["des-fixed-clock"]
            summary["fixed_clock"] = {k: fixed[k] for k in ("fused_time_mape", "cc_time_mape", "paced_time_mape")}
        if engine:
            paced = ps["m_ub_star_predicted_by_model_paced"] or {}
            summary.update(m_ub_star_predicted_des=h["m_ub_star_predicted_by_model"]["des"],
                           m_ub_star_predicted_des_paced=paced.get("des"))
        if repeats is not None:
            summary["over_runs"] = over_runs(head, h["m_ub_star_predicted"], repeats,
                                             series_commits(rs, key_of(head)))
        summary["targets"] = targets(summary)
        summary["staggered"] = _other_staggers(series, head, headline_model)
    summary["series"] = [s.summary for s in series]
    return FaA2aReport(platform, series, engine, summary, notes)


STAGGERED_KEYS = ("fused_over_fa_above_threshold", "hiding_min_above_threshold", "m_ub_star_predicted",
                  "m_ub_star_measured", "speedup_max", "fused_clock_over_fa_max")


def _other_staggers(series: list[Series], head: Series, model: str) -> list[dict]:
    """The headline's kernel at its other program staggers and timings (``stagger_us``, 0 included
    when the headline is staggered; ``timing``), one entry per series: its fused keys (the targets'
    bounds, not the targets: those are read on the headline), its DES errors and its keys at one clock."""
    same = {k: v for k, v in head.key.items() if k not in ("stagger_us", "timing")}
    out = []
    for s in series:
        if s is not head and all(s.key[k] == v for k, v in same.items()):
            h = s.summary
            out.append({"stagger_us": s.key["stagger_us"], "timing": s.key["timing"], **{k: h[k] for k in STAGGERED_KEYS},
                        "fused_time_mape": h["errors"][model]["fused_time_mape"],
                        "cc_time_mape": h["errors"][model]["cc_time_mape"],
                        "at_clock": {k: v for k, v in (h["at_clock"] or {}).items() if not isinstance(v, dict)}})
    return out


def _fa_only_speed(s: Series) -> float:
    """The series' attention kernel, one number: the median over its points of T_FA per unit of
    work, T_FA / (batch M^2) (lower is faster; the same shapes give the same work)."""
    v = sorted(p.get("fa-only") / (p.shape.batch * p.seq_len ** 2) for p in s.points
               if math.isfinite(p.get("fa-only")))
    return v[len(v) // 2] if v else math.inf


def _paced_series(series: list[Series], head: Series) -> Series:
    """The series the fused-paced keys are read on: the headline if it measured fused-paced,
    else the d = 128 series with the most fused-paced points (run 7's Gluon records had none);
    each series' paced residual is to its own FA-only."""
    def paced_points(s):
        return sum(math.isfinite(p.get("fused-paced")) for p in s.points)
    if paced_points(head) or not any(paced_points(s) for s in series):
        return head
    return max(series, key=lambda s: (s.key["head_dim"] == 128, paced_points(s)))


def design_stagger_us(s: Series, platform: Platform) -> float:
    """The program stagger the design test asks of the series' kernel on ``platform``
    (:func:`xsim.attention.stagger.design_stagger` on its aligned wave of K tiles)."""
    shape = max((p.shape for p in s.points), key=lambda sh: sh.programs)
    return design_stagger(platform, shape.programs, shape.tile_bytes,
                          peers=drain_peers(str(s.key.get("destination", "host")), shape.sp)).stagger_us


DESIGN_TOLERANCE_US = 0.1     # fa_bench --stagger-us design rounds S* to 0.1 us


def _headline(series: list[Series], platform: Platform | None = None) -> Series | None:
    """The series the headline numbers (and the targets) are read on: d = 128 first, then the
    most points, then steady-state timing (``timing`` "steady": every variant at the clock it holds
    when it runs on, rather than each at the boost a short launch after an idle gap gets), then the
    kernel as the design test configures it on ``platform`` (its stagger
    the design's S*, ``design_stagger_us``; without a platform: unstaggered), then the kernel
    without a stagger (a series at another stagger is a what-if beside it, ``staggered``), then
    the fastest attention kernel (`_fa_only_speed`, so that with the Triton and the Gluon
    mainloop both measured the faster one is the tool's answer; the others stay in ``series``,
    each with its own summary)."""
    if not series:
        return None

    def designed(s):
        want = design_stagger_us(s, platform) if platform is not None else 0.0
        return abs(float(s.key["stagger_us"]) - want) <= DESIGN_TOLERANCE_US
    return min(series, key=lambda s: (s.key["head_dim"] != 128, -len(s.points), s.key["timing"] != "steady",
                                      not designed(s),
                                      s.key["stagger_us"] != 0, _fa_only_speed(s)))


HEADLINE_KEYS = ("speedup_max", "m_ub_star_predicted", "m_ub_star_measured", "fused_over_fa_above_threshold",
                 "hiding_min_above_threshold", "fused_time_mape", "cc_time_mape", "fa_vs_cudnn_min",
                 "fa_vs_cudnn_min_all_series",
                 "paced_time_mape", "paced_over_fa_above_threshold", "m_ub_star_measured_paced",
                 "m_ub_star_predicted_des", "m_ub_star_predicted_des_paced")
