"""The fa-a2a experiment on the page: headline rows and targets, captioned Fig. 11, folded Table 3."""

from __future__ import annotations

import math

from xsim.report.fa_a2a import HEADLINE_KEYS, FaA2aReport
from xsim.report.fa_a2a_tables import PREDICTION_HEADER, TABLE3_HEADER, prediction_rows, table3_rows
from xsim.report.fa_a2a_figures import figures
from xsim.report.page import Details, Figure, Headline, Section, json_html, table_html

LABELS = {"speedup_max": "largest sender-visible speedup, fused over serial",
          "m_ub_star_predicted": "M_ub*, predicted (eq. 20; tokens)",
          "m_ub_star_measured": "smallest M whose E_res is at the issue floor, measured",
          "m_ub_star_predicted_des": "smallest M whose DES E_res is at the issue floor (the gated model's threshold)",
          "m_ub_star_predicted_des_paced": "the same for the fused-paced kernel, DES",
          "fused_over_fa_above_threshold": "fused / FA-only above 2 M_ub* (target <= 1.02)",
          "hiding_min_above_threshold": "hiding ratio H above 2 M_ub*, worst (eq. 21; target >= 0.95)",
          "fused_time_mape": "fused time, predicted vs measured, MAPE % (target <= 5)",
          "cc_time_mape": "completion-coupled time, predicted vs measured, MAPE % (target <= 10)",
          "fa_vs_cudnn_min": "our FA-only over cuDNN SDPA, worst M, headline series (target >= 0.80)",
          "fa_vs_cudnn_min_all_series": "the same over every d = 128 series (the slower kernel too)",
          "paced_time_mape": "fused-paced time, predicted vs measured, MAPE % (on the series with it)",
          "paced_over_fa_above_threshold": "fused-paced / FA-only above 2 M_ub* (its own series)"}
CAPTION = {True: "Read the fused kernel's residual over FA-only time E_res/T_FA (markers) against the X-Stage "
                 "prediction (eqs. 18-19, flat at the issue floor past M_ub*) and the completion-coupled one "
                 "(eq. 17, growing with M): the paper's Fig. 11 for our hardware.",
           False: "The same residuals in microseconds: the slope test between eq. 18 (X-Stage, flat) and "
                  "eq. 17 (completion-coupled, growing with the number of output waves)."}


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def headline(rep: FaA2aReport) -> list[Headline]:
    rows = [Headline(LABELS.get(k, k), _fmt(rep.summary.get(k)), k) for k in HEADLINE_KEYS]
    for t in rep.summary.get("targets", []):
        verdict = {True: "pass", False: "FAIL", None: "n/a"}[t["pass"]]
        runs = f"; {t['runs_pass']} runs meet it" if "runs_pass" in t else ""
        rows.append(Headline(f"target: {t['target']}", f"{_fmt(t['value'])} ({verdict}{runs})", f"bound {t['bound']}"))
    return rows


def section(rep: FaA2aReport) -> Section:
    figs = [Figure(name, fig, CAPTION[not name.endswith("-us")]) for name, fig in figures(rep).items()]
    details = []
    for s in rep.series:
        details.append(Details(f"Table 3: {s.key} (us, medians)", table_html(TABLE3_HEADER, table3_rows(s))))
        details.append(Details(f"measured vs predicted: {s.key} (us)",
                               table_html(PREDICTION_HEADER, prediction_rows(s))))
    details.append(Details("the raw summary", json_html(rep.summary)))
    return Section(title=f"fa-a2a: FlashAttention fused with the Ulysses All-to-All on {rep.platform.name}",
                   meta=f"headline model {rep.summary.get('headline_model', '?')}",
                   headline=headline(rep), figures=figs, details=details, notes=list(rep.notes))
