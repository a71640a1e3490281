"""The moe experiment's numbers: measured kernels beside the what-if tool's predictions.

Records (experiment ``moe``): kind ``kernel`` (params ``config`` = scenario name, ``schedule``
wave | interleaved | selector, the shape, routing, ``lead``; stats ``kernel_us``, ``span_us``,
``stall_us`` (eq. 15 per tile), ``wait_us`` (the wait before a mainloop), ``l1_mainloop_us``,
``l2_mainloop_us``; a config that is not a shipped scenario is predicted from the builder's
defaults with the record's shape), kind ``mainloop`` (the compute model's
calibration, :mod:`xsim.moe.compute`) and kind ``gemm`` (``triton_us`` beside ``cublas_us``).
Every measured config is predicted once from its scenario (the record's shape and lead), on
one platform, with the compute model fitted once on the mainloop records: nothing is tuned
per point. The selector's pick comes from the prediction; its measured time is the picked
schedule's (a ``selector`` record, if one exists, is used instead).

"Eq. 14 predicts a gain" means the wave gap violates the rate bound (``eq14_wave_ok`` false):
those skewed configs are the ones ``geomean_speedup_skewed_measured`` covers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from xsim.builders import moe as builder
from xsim.builders.moe import without_link
from xsim.moe import clocked
from xsim.moe.clocked import MoEClockLaw
from xsim.moe.compute import read_records, shipped_records_path
from xsim.moe.contention_model import is_gemm_only
from xsim.params import resolve
from xsim.platform import Platform
from xsim.report.moe_paper import paper_table2
from xsim.scenario import ScenarioError, load_scenario

SCHEDULES = ("wave", "interleaved")
SHAPE_KEYS = ("hidden", "intermediate", "experts", "topk", "tokens", "ep", "precision", "block_m", "block_n1",
              "block_n2", "routing", "skew", "seed")


@dataclass
class ConfigRow:
    config: str
    routing: str
    measured: dict                  # schedule -> {"kernel_us", "span", "stall", "l1_mainloop_us", "l2_mainloop_us"}
    predicted: dict = field(default_factory=dict)   # the DES summary of both schedules (+ selector)
    closed_form: dict = field(default_factory=dict)
    where: str = ""
    measured_local: dict = field(default_factory=dict)    # the local-Combine control, as measured
    predicted_local: dict = field(default_factory=dict)   # the DES without the link (without_link)
    params: dict = field(default_factory=dict)            # the builder's params it was predicted with

    @property
    def speedup_measured(self) -> float:
        return self.measured["wave"]["kernel_us"] / self.measured["interleaved"]["kernel_us"]

    @property
    def speedup_predicted(self) -> float:
        return self.predicted.get("speedup", math.nan)

    @property
    def skewed(self) -> bool:
        return self.routing in ("zipf", "hot")


@dataclass
class MoEReport:
    platform: Platform
    rows: list[ConfigRow]
    gemm: list[dict]
    paper: list[dict]
    summary: dict
    mainloops: list = field(default_factory=list)   # the mainloop records the compute model was made from


def _median(record, name: str) -> float:
    return record.stat(name, "median")


def _stats(record, name: str) -> dict:
    return dict(record.data["stats"].get(name, {}))


def _measured(records) -> dict:
    """Latest kernel record per (config, schedule): {config: {schedule: measured}}."""
    out: dict = {}
    for r in records:
        p = r.params
        out.setdefault(p["config"], {})[p["schedule"]] = {
            "kernel_us": _median(r, "kernel_us"), "span": _stats(r, "span_us"), "stall": _stats(r, "stall_us"),
            "wait": _stats(r, "wait_us"),
            "l1_mainloop_us": _median(r, "l1_mainloop_us"), "l2_mainloop_us": _median(r, "l2_mainloop_us"),
            "run_clock_mhz": _median(r, "run_clock_mhz"), "lead": p.get("lead"), "params": dict(p), "where": r.where}
    return out


def _params(config: str, measured: dict) -> dict:
    """The scenario's params (the builder's defaults if the config is not a shipped scenario),
    with the shape, routing and lead the kernel ran."""
    try:
        given = dict(load_scenario(config).params)
    except ScenarioError:
        given = resolve(builder.PARAMS, {}, config)
    ran = measured.get("interleaved", measured.get("wave"))["params"]
    given.update({k: ran[k] for k in SHAPE_KEYS if k in ran})
    lead = measured.get("interleaved", {}).get("lead")
    if lead is not None:
        given["lead"] = float(lead)
    given["schedule"] = "both"
    return given


def _geomean(values) -> float:
    v = np.asarray([x for x in values if x is not None and np.isfinite(x) and x > 0], dtype=float)
    return float(np.exp(np.log(v).mean())) if v.size else math.nan


def _selector(rows: list[ConfigRow]) -> dict:
    vs_wave, vs_int, picks = [], [], {}
    for row in rows:
        pick = row.predicted.get("selector", {}).get("schedule")
        if pick is None:
            continue
        m = row.measured
        t_sel = m["selector"]["kernel_us"] if "selector" in m else m[pick]["kernel_us"]
        vs_wave.append(m["wave"]["kernel_us"] / t_sel)
        vs_int.append(m["interleaved"]["kernel_us"] / t_sel)
        picks[row.config] = pick
    worst = lambda v: float(min(v)) if v else math.nan  # noqa: E731
    return {"selector_geomean": _geomean(vs_wave), "selector_worst": worst(vs_wave),
            "selector_vs_interleaved_geomean": _geomean(vs_int), "selector_vs_interleaved_worst": worst(vs_int),
            "selector_picks": picks}


def _gemm(records) -> list[dict]:
    """The latest record per point (precision, path, m, n, k): a re-measured kernel replaces
    the older kernel's number instead of both counting."""
    out = {}
    for r in records:
        t, c = _median(r, "triton_us"), _median(r, "cublas_us")
        key = tuple(r.params.get(k) for k in ("precision", "path", "m", "n", "k"))
        out[key] = {**{k: r.params.get(k) for k in ("precision", "m", "n", "k", "path")}, "triton_us": t,
                    "cublas_us": c, "vs_cublas": c / t if t > 0 else math.nan, "tiles": r.params.get("tiles")}
    return list(out.values())


def batched_gemm(points: list[dict]) -> dict:
    """The additional batched diagnostic (``gemm_batched`` records: the single-expert shapes
    over several experts in one launch against batched cuBLAS); never ``gemm_vs_cublas_min``."""
    ratios = [g["vs_cublas"] for g in points if np.isfinite(g["vs_cublas"])]
    return {"gemm_batched_vs_cublas_min": float(min(ratios)) if ratios else math.nan,
            "gemm_batched_vs_cublas_geomean": _geomean(ratios) if ratios else math.nan,
            "n_gemm_batched_points": len(ratios)}


SPREAD_SEEDS = 4   # the report's prediction: the mean kernel time over this many spread seeds
# ``level = "predicted"``: each schedule's compute level predicted from the tile streams (branch moefid,
# docs/moe.md "The per-schedule level predicted from the tile streams"), an option. Its bandwidth was
# chosen on the H200 (3.8 of the roofline's 4.3 TB/s) and goes to another GPU as that fraction of its
# roofline figure (the H100: 2.65 of 3.0 TB/s, docs/h100-host.md).
PREDICTED_LEVEL = {"compute": "contention", "hbm_share": "inflight", "contention_spread": "work",
                   "contention_anchor": "ratio", "contention_cv": "residual", "hbm_fraction": 3.8 / 4.3}
LEVELS = ("auto", "records", "predicted")   # auto: predicted where GEMM-only mainloop records are at hand


def resolve_level(level: str, mainloops: list[dict], platform: Platform) -> str:
    """``level``, with "auto" made "predicted" when the mainloop records the builder will use (those
    given, else the platform's shipped ones) hold checked GEMM-only runs (:func:`is_gemm_only`, what the pre-pass
    calibrates on), else "records"."""
    if level not in LEVELS:
        raise ValueError(f'"level" must be one of {", ".join(LEVELS)}, got {level!r}')
    if level != "auto":
        return level
    if not mainloops:
        path = shipped_records_path(platform.name)
        mainloops = read_records(path) if path.exists() else []
    return "predicted" if any(map(is_gemm_only, mainloops)) else "records"


def build(rs, platform: Platform, des: bool = True, paper_des: bool = False,
          engine: str = "fast", compute: str | None = None, spread_seeds: int | None = None,
          spread_seed: int = 0, mainloop_pool: str | None = None, level: str = "auto",
          clock_law: MoEClockLaw | None = None) -> MoEReport:
    """Every measured config beside its prediction, the GEMM check, the paper's Table 2 rows
    (``compute``, ``mainloop_pool``: the builder's for every config instead of the scenario's;
    ``spread_seeds`` seeds from ``spread_seed`` on, default :data:`SPREAD_SEEDS`, averaged: a
    prediction that is one draw of the per-tile spread is itself noisy; ``level`` "predicted":
    :data:`PREDICTED_LEVEL` for every config, before ``compute`` and ``mainloop_pool``; "auto", the
    default: :func:`resolve_level`). With a
    ``clock_law``, a config measured back to back (``timing`` "steady": at the power cap) is predicted
    at the cap, each schedule at its own solved clock (:mod:`xsim.moe.clocked`); a burst-timed one,
    whose launches never reach the cap, at one clock as without it."""
    mainloops = [r.data for r in rs.select("moe", "mainloop")]
    level = resolve_level(level, mainloops, platform)
    measured = _measured(rs.select("moe", "kernel"))
    local = _measured(rs.select("moe", "kernel_local"))
    rows = []
    for config in sorted(measured):
        m = measured[config]
        if not all(s in m for s in SCHEDULES):
            continue
        params = _params(config, m)
        if level == "predicted":
            params.update(PREDICTED_LEVEL)
        if compute is not None:
            params["compute"] = compute
        if mainloop_pool is not None:
            params["mainloop_pool"] = mainloop_pool
        params["spread_seeds"] = SPREAD_SEEDS if spread_seeds is None else spread_seeds
        params["spread_seed"] = spread_seed
        row = ConfigRow(config, params["routing"], m, where=m["wave"]["where"], measured_local=local.get(config, {}),
                        params=params)
        row.closed_form = builder.predict(params, platform, mainloops or None)
        if des:
            configs: dict = {}   # the host run's Configs, reused by the local run (the same tables and pre-pass)
            _, row.predicted = builder.simulate(params, platform, engine, trace=False, mainloop_records=mainloops or None,
                                                configs=configs)
            if clock_law is not None and _steady(m) and clock_law.covers(config):
                solved = clocked.simulate(params, config, platform, clock_law, engine, mainloops or None)
                row.predicted = clocked.at_cap(row.predicted, solved)
            if config in local:
                _, row.predicted_local = builder.simulate(params, without_link(platform), engine, trace=False,
                                                          mainloop_records=mainloops or None, configs=configs)
        rows.append(row)
    gemm = _gemm(rs.select("moe", "gemm"))
    paper = paper_table2(paper_des, engine)
    summary = _summary(rows, gemm, paper, platform, mainloops, des)
    summary.update(batched_gemm(_gemm(rs.select("moe", "gemm_batched"))))
    summary["moe_level"] = level
    if clock_law is not None:
        summary.update(clock_summary(rows, clock_law))
    summary["spread_seeds"] = [spread_seed, spread_seed + (SPREAD_SEEDS if spread_seeds is None else spread_seeds) - 1]
    return MoEReport(platform, rows, gemm, paper, summary, mainloops)


def _steady(measured: dict) -> bool:
    return all(measured[s]["params"].get("timing") == "steady" for s in SCHEDULES)


def clock_summary(rows: list[ConfigRow], law: MoEClockLaw) -> dict:
    """The law, the configs predicted at the cap (and the steady ones it does not cover), their speedup
    error at one clock beside it and the predicted clocks against the kernels' own (CLK) clocks."""
    capped = [r for r in rows if "clock" in r.predicted]
    uncovered = [r.config for r in rows if _steady(r.measured) and not law.covers(r.config)]
    fixed = [abs(r.predicted["speedup_fixed_clock"] - r.speedup_measured) for r in capped]
    clocks = [abs(r.predicted["clock"][s]["predicted_mhz"] / r.measured[s]["run_clock_mhz"] - 1) for r in capped
              for s in SCHEDULES if math.isfinite(r.measured[s]["run_clock_mhz"])]
    return {"clock_law": law.to_dict(), "configs_at_cap": [r.config for r in capped], "configs_without_law": uncovered,
            "speedup_abs_err_max_fixed_clock": float(max(fixed)) if fixed else math.nan,
            "clock_err_max_percent": 100.0 * float(max(clocks)) if clocks else math.nan,
            "clock_err_mean_percent": 100.0 * float(np.mean(clocks)) if clocks else math.nan}


def kernel_time_errors(rows: list[ConfigRow]) -> dict:
    """Predicted against measured kernel times over every config and schedule: over the link
    (``kernel`` records) and, the compute model's own share, locally (``kernel_local`` records
    against the DES without the link)."""
    out = {}
    for tag, pred_of, meas_of in (("", lambda r: r.predicted, lambda r: r.measured),
                                  ("_local", lambda r: r.predicted_local, lambda r: r.measured_local)):
        err = [abs(pred_of(r)[s]["kernel_us"] / meas_of(r)[s]["kernel_us"] - 1.0) for r in rows
               for s in SCHEDULES if s in pred_of(r) and s in meas_of(r)]
        out[f"kernel_time_mape{tag}"] = 100.0 * float(np.mean(err)) if err else math.nan
        out[f"kernel_time_err_max{tag}"] = 100.0 * float(max(err)) if err else math.nan
    return out


def _summary(rows, gemm, paper, platform, mainloops, des) -> dict:
    meas = [r.speedup_measured for r in rows]
    pred = [r.speedup_predicted for r in rows]
    err = [abs(p - m) for p, m in zip(pred, meas) if np.isfinite(p)]
    gain = [r for r in rows if r.skewed and not r.closed_form.get("eq14_wave_ok", True)]
    sources = sorted({f"{k}:{v}" for r in rows for k, v in r.closed_form.get("compute_model", {}).items()})
    return {
        "experiment": "moe", "platform": platform.name,
        "n_configs": len(rows),
        "geomean_speedup_measured": _geomean(meas),
        "geomean_speedup_predicted": _geomean(pred) if des else math.nan,
        "speedup_abs_err_max": float(max(err)) if err else math.nan,
        "n_speedup_within_0_05": int(sum(e <= 0.05 for e in err)),
        "geomean_speedup_skewed_measured": _geomean([r.speedup_measured for r in gain]),
        "n_skewed_gain_configs": len(gain),
        **_selector(rows),
        "gemm_vs_cublas_min": float(min(g["vs_cublas"] for g in gemm)) if gemm else math.nan,
        **kernel_time_errors(rows),
        "compute_model": sources, "n_mainloop_records": len(mainloops),
        "table2": [table2_row(r) for r in rows],
        "paper_table2": paper,
    }


def table2_row(row: ConfigRow) -> dict:
    """Our Table 2 row: span and mainloop medians, the stall per tile predicted beside measured.

    ``eq15_*``: eq. 15 per Linear-2 tile (median; at S = 0 nothing covers the span, so it is
    the span) from the DES beside the kernel's ``stall_us``; ``wait_*``: each tile's wait
    before its mainloop (mean) from the DES, plus the measured wait with nothing pending (the
    compute model's overhead, 0 without records), beside the kernel's ``wait_us``.
    """
    m, p = row.measured, row.predicted
    pred = lambda s, k, q="median": p.get(s, {}).get(k, {}).get(q, math.nan)  # noqa: E731
    meas = lambda s, k, q="median": m[s][k].get(q, math.nan)  # noqa: E731
    return {
        "config": row.config,
        "span_measured_us": [meas(s, "span") for s in SCHEDULES],
        "span_predicted_us": [pred(s, "span_us") for s in SCHEDULES],
        "mainloop_measured_us": [m["wave"]["l2_mainloop_us"], m["wave"]["l1_mainloop_us"]],
        "mainloop_model_us": [p.get("l2_mainloop_us", math.nan), p.get("l1_mainloop_us", math.nan)],
        "eq15_predicted_us": [pred(s, "eq15_stall_us") for s in SCHEDULES],
        "eq15_measured_us": [meas(s, "stall") for s in SCHEDULES],
        "wait_predicted_us": [pred(s, "stall_us", "mean") + np.mean(list(p.get("tile_wait_overhead_us", {}).values())
                                                                     or [0.0]) for s in SCHEDULES],
        "wait_measured_us": [meas(s, "wait", "mean") for s in SCHEDULES],
        "eq15_closed_form_us": [row.closed_form.get("stall_wave_us"), row.closed_form.get("stall_int_us")],
    }
