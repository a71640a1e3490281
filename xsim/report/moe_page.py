"""The moe experiment on the page: headline rows, captioned Fig. 8 and Fig. 10, folded tables."""

from __future__ import annotations

import math

from xsim.report.moe import MoEReport
from xsim.report.moe_figures import speedup_figure, span_figure
from xsim.report.page import Details, Figure, Headline, Section, json_html, table_html

KEYS = (("n_configs", "configs measured (both schedules)"),
        ("geomean_speedup_measured", "geomean speedup, interleaved over waves, measured"),
        ("geomean_speedup_predicted", "the same, predicted (DES)"),
        ("speedup_abs_err_max", "largest |predicted - measured| speedup (target <= 0.05)"),
        ("geomean_speedup_skewed_measured", "skewed configs where eq. 14 predicts a gain (target >= 1.10)"),
        ("selector_geomean", "selector over expert waves, measured geomean"),
        ("selector_worst", "selector over expert waves, worst config (target >= 0.98)"),
        ("gemm_vs_cublas_min", "the kernel's GEMM path over cuBLAS, worst shape (target >= 0.70)"),
        ("gemm_batched_vs_cublas_min", "diagnostic: the same shapes batched over experts, vs batched cuBLAS"),
        ("kernel_time_mape", "predicted vs measured kernel times over the link, mean error (%)"),
        ("kernel_time_mape_local", "the same for the local-Combine control, DES without the link (%)"))
AT_CAP_KEYS = (("speedup_abs_err_max_fixed_clock", "largest speedup error of the same DES at one clock"),
               ("clock_err_max_percent", "predicted vs measured SM clock at the cap, largest error (%)"))
CAPTIONS = {
    "moe_fig8_speedup": "Read each config's measured speedup of the interleaved schedule over expert waves "
                        "beside the DES prediction: the paper's Fig. 8 for our hardware; eq. 14 says where a "
                        "gain is possible.",
    "moe_fig10_span": "Read how far each Linear-2 tile's remote-store span T_RS moves from the drain-limited "
                      "regime (waves) towards the backpressure-free floor (interleaved): the paper's Fig. 10.",
    "moe_xstage_traced": "Read the hidden stage itself: the bytes the X-Stage held while the fused kernel ran, rebuilt "
                         "from the kernel's own per-tile stamps (each tile's Combine bytes enter over its store span "
                         "and drain at R), beside the DES's q(t) on the very same table, for the traced config whose "
                         "speedup the DES misses most.",
}
TABLE2_HEADER = ["config", "span w/i meas", "span w/i pred", "T_mma L2/L1 meas", "T_mma model", "eq15 w/i pred",
                 "eq15 w/i meas", "wait w/i pred", "wait w/i meas"]
PAPER_HEADER = ["model", "paper span w/i", "closed form", "DES", "DES + paper mma", "paper stall wave pred/meas",
                "closed + paper mma", "DES + paper mma (mean)"]


def _fmt(value) -> str:
    return "–" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.4g}"


def _pair(values) -> str:
    return "/".join(_fmt(v) for v in values) if values else "–"


def headline(rep: MoEReport) -> list[Headline]:
    """The headline rows; with configs predicted at the power cap (a MoE clock law, steady records), also
    the fixed clock's error and the clocks' beside them."""
    keys = KEYS + (AT_CAP_KEYS if rep.summary.get("configs_at_cap") else ())
    return [Headline(label, _fmt(rep.summary[key]), key) for key, label in keys]


def _table2(rep: MoEReport) -> str:
    rows = [[r["config"], _pair(r["span_measured_us"]), _pair(r["span_predicted_us"]),
             _pair(r["mainloop_measured_us"]), _pair(r["mainloop_model_us"]), _pair(r["eq15_predicted_us"]),
             _pair(r["eq15_measured_us"]), _pair(r["wait_predicted_us"]), _pair(r["wait_measured_us"])]
            for r in rep.summary["table2"]]
    return table_html(TABLE2_HEADER, rows)


def _paper(rep: MoEReport) -> str:
    rows = [[r["model"], _pair(r["paper_span_us"]), _pair(r["closed_span_us"]), _pair(r.get("des_span_us")),
             _pair(r.get("des_paper_mma_span_us")), _pair(r["paper_stall_wave_us"]),
             _pair(r["closed_paper_mma_stall_us"]), _pair(r.get("des_paper_mma_stall_mean_us"))]
            for r in rep.summary["paper_table2"]]
    return table_html(PAPER_HEADER, rows)


def _law_meta(summary: dict) -> str:
    law = summary.get("clock_law")
    if not law:
        return ""
    missing = summary["configs_without_law"]
    return (f"; {len(summary['configs_at_cap'])} steady configs predicted at the power cap (MoE clock law, "
            f"beta {law['beta']:.3f}, {law['source']})" + (f", {len(missing)} without a law at one clock" if missing else ""))


def _traced(rep: MoEReport) -> tuple[list, list]:
    """The traced-runs panel (:mod:`xsim.report.moe_traces`): (figures, details); empty without shipped traces."""
    from xsim.report import moe_traces

    arrays, commits = moe_traces.shipped_fused_traces(rep.platform.name)
    points, stale = moe_traces.traced_points(rep, arrays) if arrays and rep.rows else ([], [])
    config = moe_traces.worst_config(rep, points)
    if config is None:
        return [], []
    fig = Figure("moe_xstage_traced", moe_traces.occupancy_figure(rep, points, config), CAPTIONS["moe_xstage_traced"])
    title = (f"the X-Stage over every traced run, rebuilt from the stamps and simulated (traces of "
             f"{', '.join(commits) or 'unknown commits'}; above gate and link idle: shares of the span"
             + (f"; left out, traced on another table: {', '.join(stale)}" if stale else "") + ")")
    return [fig], [Details(title, table_html(moe_traces.HEADER, moe_traces.table_rows(points)))]


def section(rep: MoEReport) -> Section:
    figures = [Figure("moe_fig8_speedup", speedup_figure(rep), CAPTIONS["moe_fig8_speedup"]),
               Figure("moe_fig10_span", span_figure(rep), CAPTIONS["moe_fig10_span"])] if rep.rows else []
    traced_figures, traced_details = _traced(rep)
    figures += traced_figures
    return Section(
        title=f"moe: fused MoE layer, expert waves vs interleaved, predicted vs measured on {rep.platform.name}",
        meta=f"compute model {', '.join(rep.summary['compute_model']) or 'roofline'}; "
             f"{rep.summary['n_mainloop_records']} mainloop records" + _law_meta(rep.summary),
        headline=headline(rep), figures=figures,
        details=[Details("Table 2 for our hardware (us; w/i = wave/interleaved medians, waits are means)",
                         _table2(rep)),
                 Details("the paper's Table 2 rows on paper-8gpu from shapes alone (us)", _paper(rep)),
                 *traced_details,
                 Details("the raw summary", json_html(rep.summary))])
