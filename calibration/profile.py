"""A fitted :class:`~xsim.platform.Platform` with full provenance, reproducible byte for byte.

Everything in the profile comes from the records or the fit: no wall clock (the date is the
last record's ``time_utc``), no paths (files by name and sha256), floats rounded to six
significant digits so that the same records give the same bytes.
"""

from __future__ import annotations

import math
from typing import Any

from calibration.fidelity import MODELS, compare, split_summary
from calibration.fit import FitResult
from calibration.records import RecordSet
from calibration.stages import StageFit
from xsim.platform import REFERENCE_BURST_BYTES, REFERENCE_PRODUCERS, Platform
from xsim.units import MIB

SIGNIFICANT_DIGITS = 6
METHOD = ("R: zero-gap drain-limited periodic periods, T = V/R (Sec. 3.3); T_iss0(K, B): recovered-plateau "
          "issue times (isolated bursts and gaps >= 1.1 G*, q_peak <= 0.9 Q), IssueModel form; Q(K): per-K fit "
          "of max(T_iss0, (V - Q_K)/R) to isolated bursts (Q = V_knee - R T_iss0, Sec. 3.5), then "
          "min(K q_producer, Q_max). Relative residuals, scipy least_squares, 95% CIs from the Jacobian.")


def rounded(value: Any) -> Any:
    """Floats to six significant digits, recursively (NaN/inf become None)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float) or hasattr(value, "item"):
        value = float(value) if not isinstance(value, int) else value
        if isinstance(value, float):
            return float(f"{value:.{SIGNIFICANT_DIGITS}g}") if math.isfinite(value) else None
        return value
    if isinstance(value, dict):
        return {str(k): rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v) for v in value]
    return value


def stage_summary(fit: StageFit) -> dict:
    return {
        "parameters": {n: {"value": v, "ci95": list(ci)} for n, v, ci in zip(fit.names, fit.values, fit.ci95)},
        "n_points": fit.n_points,
        "residual_kind": fit.residual_kind,
        "rms_residual": fit.rms_residual,
        "residuals": list(fit.residuals),
    }


def _knees(fit: FitResult) -> dict:
    out = {}
    for k, knee in sorted(fit.knee_fits.items()):
        lo, hi = knee.ci95[0]
        out[str(k)] = {"capacity_bytes": knee.value("capacity_mib") * MIB, "ci95_bytes": [lo * MIB, hi * MIB],
                       "n_points": knee.n_points, "rms_rel_residual": knee.rms_residual}
    return out


def _records(rs: RecordSet) -> dict:
    return {
        "files": [{"name": n, "sha256": h} for n, h in rs.files],
        "sha256": rs.sha256,
        "n_records": len(rs.records),
        "n_skipped_failed_check": rs.skipped_failed_check,
        "commits": rs.commits,
        "dirty": any(bool(r.data.get("dirty")) for r in rs.records),
    }


def _measured_on(rs: RecordSet) -> dict:
    keys = ("gpu", "gpu_count", "sms", "sm_clock_mhz", "link", "driver", "cuda", "torch", "triton")
    return {k: rs.platform.get(k) for k in keys if k in rs.platform}


def _headline(platform: Platform, fit: FitResult) -> dict:
    best = max(fit.mechanism_drain_gbps.values())
    ce = fit.baseline_gbps.get("ce-copy")
    return {
        "t_iss0_us_at_k132_b32kib": platform.t_iss0_us(REFERENCE_PRODUCERS, REFERENCE_BURST_BYTES),
        "capacity_bytes_at_k132": platform.capacity_bytes(REFERENCE_PRODUCERS),
        "best_mechanism": max(fit.mechanism_drain_gbps, key=fit.mechanism_drain_gbps.get),
        "ce_ratio": best / ce if ce else None,
    }


def _arbitration(weights, spread=None) -> dict | None:
    if weights is None:
        return None
    lo, med, hi = weights.issue_spread_us
    out = {"trace": weights.trace, "sha256": weights.sha256, "n_producers": len(weights.weights),
           "per_producer_mean_issue_us": {"min": lo, "median": med, "max": hi},
           "run_correlation": weights.run_correlation,
           "method": "weight_p = mean over producers of mean issue / producer p's mean issue, normalised to mean 1 "
                     "(calibration/arbitration.py)"}
    if spread is not None:
        stats = ("mean", "p90", "max")
        out["model"] = {
            "weights_by": "sm" if spread.arbitration.sm_weights is not None else "rank",
            "placements_k": [k for k, _ in spread.arbitration.placements],
            "burst_sigma": spread.sigma, "sigma_ref_bytes": spread.arbitration.sigma_ref_bytes,
            "trace_issue_us": dict(zip(stats, spread.measured)),
            "des_issue_us": dict(zip(stats, spread.predicted)),
            "des_issue_us_without_spread": dict(zip(stats, spread.at_zero)),
            "rms_log_error": spread.rms_log_error,
            "weight_exponent": spread.weight_exponent,
            "by_weight_exponent": [{"weight_exponent": e, "burst_sigma": sg, "rms_log_error": err}
                                   for e, sg, err in spread.by_exponent],
            **({"capacity_sigma": spread.capacity_sigma, "capacity_shape": spread.capacity_shape,
                "capacity_traces": list(spread.capacity_traces),
                "capacity_set_rms_log_error_without": spread.capacity_baseline,
                "by_capacity_sigma": [{"capacity_shape": sh, "capacity_sigma": c, "weight_exponent": e,
                                       "burst_sigma": sg, "rms_log_error": err}
                                      for sh, c, e, sg, err in spread.by_capacity]} if spread.capacity_sigma else {}),
            "method": "weights indexed by the SM each producer ran on (trace smid), shrunk to w ** weight_exponent; "
                      "per-burst lognormal factors with sigma on a fixed grid fitted so that the DES of the trace's "
                      "point matches its mean, p90 and mean per-burst max issue, at each weight exponent of a grid; "
                      "a shrink (exponent < 1) only if it cuts the rms log error by 20 % (calibration/spread.py)"}
    return out


def base_platform(fit: FitResult, rs: RecordSet, name: str) -> Platform:
    """The fitted parameters alone (rounded as the profile stores them), for fits that need the DES."""
    return Platform(name=name, drain_rate_gbps=rounded(fit.drain_rate_gbps),
                    drain_half_producers=rounded(fit.drain_half_producers),
                    issue=type(fit.issue_model)(**rounded(vars(fit.issue_model))),
                    capacity=type(fit.capacity_model)(**rounded(vars(fit.capacity_model))),
                    sms=int(rs.platform.get("sms", 132)), gpus=int(rs.platform.get("gpu_count", 2)),
                    burst_overhead_us=rounded(fit.burst_overhead.values[0]),
                    grid_barrier_us=rounded(fit.grid_barrier.values[0]),
                    grid_barrier_zero_gap_us=rounded(fit.zero_gap_barrier_us))


def _drain_law(fit: FitResult) -> dict:
    """The R(K) stage's summary, only when it was taken (older profiles keep their bytes)."""
    if fit.drain_law is None:
        return {}
    return {"drain_rate_law": {**stage_summary(fit.drain_law),
                               "rms_residual_one_rate": fit.drain.rms_residual,
                               "method": "R(K) = R [K/(K + K0)] / [132/(132 + K0)] on the same drain-limited points "
                                         "as R, taken because it cuts the one-R rms residual by 20 % "
                                         "(calibration/fit.py); drain_rate_gbps is then R(132)"
                                         + ("; fitted after the one-R stages (knees, plateau, costs), which "
                                            "keep R, and used by the DES, the closed forms and the "
                                            "free-running factor" if fit.drain_law_mode == "after" else "")}}


def build_profile(fit: FitResult, rs: RecordSet, name: str, description: str = "", weights=None,
                  spread=None, des_errors: dict | None = None) -> Platform:
    """The fitted platform; its provenance says how, from what, and how well it predicts.

    ``weights``: per-producer arbitration weights (:mod:`calibration.arbitration`) or None (fair);
    ``spread``: the SM-indexed weights with their per-burst spread (:mod:`calibration.spread`),
    which replace ``weights`` in the model; ``des_errors``: the DES's held-out errors on this very
    platform, tails included (``xsim.report.micro.heldout_errors``), recorded beside the closed
    forms' (which predict one number per point, so have no tails).
    """
    base = Platform(name=name, drain_rate_gbps=rounded(fit.drain_rate_gbps),
                    drain_half_producers=rounded(fit.drain_half_producers), issue=fit.issue_model,
                    capacity=fit.capacity_model, sms=int(rs.platform.get("sms", 132)),
                    gpus=int(rs.platform.get("gpu_count", 2)), status="measured",
                    burst_overhead_us=rounded(fit.burst_overhead.values[0]),
                    grid_barrier_us=rounded(fit.grid_barrier.values[0]),
                    grid_barrier_zero_gap_us=rounded(fit.zero_gap_barrier_us))
    heldout = {m: split_summary(compare(fit.split.heldout, base, m)) for m in MODELS}
    train = {m: split_summary(compare(fit.split.train, base, m)) for m in MODELS}
    if des_errors is not None:
        heldout["des"] = des_errors
    provenance = {
        "source": "xsim calibrate: calibration/fit.py fitted from measurement records",
        "date_utc": rs.last_time_utc,
        "measured_on": _measured_on(rs),
        "records": _records(rs),
        "fit": {
            "mechanism": fit.mechanism, "threads_per_producer": fit.threads, "statistic": fit.statistic,
            "method": METHOD,
            "drain_rate": stage_summary(fit.drain),
            **_drain_law(fit),
            "t_iss0": stage_summary(fit.issue),
            "capacity_knees": _knees(fit),
            "capacity_model": stage_summary(fit.capacity) if fit.capacity is not None else None,
            "burst_overhead": stage_summary(fit.burst_overhead),
            "grid_barrier": stage_summary(fit.grid_barrier),
            "t_iss0_threads": fit.threads_fit,
            "t_iss0_free_running": fit.free_running_fit,
            **({"grid_barrier_zero_gap": {**fit.zero_gap_barrier_fit, "method": (
                "aligned zero-gap periodic training points that are latency-bound (V/R x 1.25 <= T_iss0 + loop "
                "+ barrier): median of period - issue - loop cost, taken because it cuts their rms relative "
                "period residual against grid_barrier_us (fitted at G > 0) by 20 % (calibration/fit.py)")}}
               if fit.zero_gap_barrier_us is not None else {}),
        },
        "headline": _headline(base, fit),
        "arbitration": _arbitration(weights, spread),
        "mechanisms_drain_rate_gbps": dict(sorted(fit.mechanism_drain_gbps.items())),
        "baselines_gbps": dict(sorted(fit.baseline_gbps.items())),
        "heldout": {"split": fit.split.describe(), "n_train": len(fit.split.train),
                    "n_heldout": len(fit.split.heldout),
                    "models": {"fluid": "the paper's eqs. 2, 3, 7 with G = gap + loop cost (+ barrier when aligned)",
                               "mode-aware": "aligned bursts meet an empty X-Stage (eq. 7), free-running "
                                             "ones escape the capacity floor (eq. 3); calibration.fidelity",
                               "des": "the DES (xsim.des) on this profile, mean/p90/max-over-CTA issue per point"},
                    "errors_percent": heldout,
                    "train_errors_percent": train},
    }
    gpu = rs.platform.get("gpu", "?")
    text = description or (f"{gpu} x{base.gpus} ({rs.platform.get('link', '?')}), {fit.mechanism} remote stores, "
                           f"fitted by xsim calibrate from {len(rs.records)} records")
    return Platform(name=name, drain_rate_gbps=base.drain_rate_gbps, drain_half_producers=base.drain_half_producers,
                    issue=type(fit.issue_model)(**rounded(vars(fit.issue_model))),
                    capacity=type(fit.capacity_model)(**rounded(vars(fit.capacity_model))),
                    sms=base.sms, gpus=base.gpus, status="measured", description=text,
                    burst_overhead_us=base.burst_overhead_us, grid_barrier_us=base.grid_barrier_us,
                    grid_barrier_zero_gap_us=base.grid_barrier_zero_gap_us,
                    producer_weights=None if weights is None or (spread is not None and spread.arbitration.sm_weights
                                                                 is not None) else weights.weights,
                    arbitration=None if spread is None else spread.arbitration,
                    provenance=rounded(provenance))
