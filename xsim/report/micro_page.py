"""The micro experiment on the page: headline rows in human units, captioned figures, folded details.

The same headline rows are printed on the terminal by ``xsim report`` (:func:`headline`),
so the page and the terminal never disagree.
"""

from __future__ import annotations

from xsim.report.micro import REFERENCE_BURST_BYTES, REFERENCE_PRODUCERS, MicroReport
from xsim.report.page import Details, Figure, Headline, Section, json_html, table_html
from xsim.units import format_bytes, format_gbps, format_percent, format_us

CAPTIONS = {
    "a_issue_vs_gap": "Read where the measured issue time (markers) comes down to its floor T_iss0 as the gap "
                      "grows past G*; the lines test eq. 3, T_iss = max(T_iss0, V/R − G).",
    "b_period_vs_gap": "Read the drain-limited plateau V/R at short gaps and the T_iss0 + G branch beyond G*; "
                       "the lines test eq. 2, T_period = max(T_iss0 + G, V/R).",
    "c_isolated_vs_volume": "Read the knee where an isolated burst's issue time leaves T_iss0 at V = Q(K) "
                            "(dotted, one per K); the lines test eq. 7, T_iss = max(T_iss0, (V − Q)/R).",
    "d_period_vs_volume": "Read whether every K × B split of one volume lands on the same line; zero-gap periods "
                          "test eq. 1, T_period = V/R, with the one fitted R.",
    "e_unfair_service": "Read how unequally producers are served in one backpressured burst: eq. 7 gives all of "
                        "them the fluid (V − Q)/R, while the slowest one sets the kernel's time.",
    "f_phase_drift": "Read how free-running producers drift out of phase burst after burst while aligned ones "
                     "stay together: the fluid eqs. 2–3 assume bursts that start together.",
}
MODES = (("aligned", "aligned"), ("free_running", "free-running"))
MODEL_NAMES = {"des": "DES", "mode-aware": "mode-aware closed form", "fluid": "fluid closed form"}
POINT_HEADER = ["kind", "K", "B", "G (µs)", "mode", "split", "issue mean (µs)", "median", "p90", "max",
                "pred. mode-aware", "pred. DES", "DES p90", "period mean (µs)", "pred. mode-aware", "pred. DES"]
BLANKS = ("Blank cells: not measured or not predicted. Isolated bursts have no period; the DES ran for the "
          "held-out points and the figures' K = 132 series only; a tail (p90, max) is predicted by the DES alone.")


def _ci(fit: dict, stage: str, name: str) -> tuple[float, float] | None:
    try:
        lo, hi = fit[stage]["parameters"][name]["ci95"]
    except (KeyError, TypeError, ValueError):
        return None
    return float(lo), float(hi)


def _range(lo: float, hi: float, fmt) -> str:
    """``354–366 GB/s``: the unit once when both ends carry the same one."""
    a, b = fmt(lo), fmt(hi)
    (na, _, ua), (nb, _, ub) = a.partition(" "), b.partition(" ")
    return f"{na}–{nb} {ua}" if ua == ub else f"{a} – {b}"


def _errors_value(e: dict) -> str:
    parts = [f"period {format_percent(e['period_mape'])}", f"mean issue {format_percent(e['issue_mean_mape'])}"]
    for key, label in (("issue_p90_mape", "p90 issue"), ("issue_max_mape", "max issue")):
        value = e.get(key)
        if value is not None and value == value:
            parts.append(f"{label} {format_percent(value)}")
    return " · ".join(parts)


def headline(rep: MicroReport) -> list[Headline]:
    """The headline rows: R (95% CI), Q(K), T_iss0, copy-engine ratio, held-out errors by mode."""
    p, s = rep.platform, rep.summary
    fit = (p.provenance or {}).get("fit", {})
    rows = []
    law = "drain_rate_law" in fit   # R(K): drain_rate_gbps is R(132), its CI the law's
    ci = _ci(fit, "drain_rate_law" if law else "drain_rate", "drain_rate_gbps")
    rows.append(Headline("R, drain rate", format_gbps(p.drain_rate_gbps)
                         + (f" (95% CI {_range(*ci, format_gbps)})" if ci else ""),
                         "fitted on zero-gap, drain-limited periods: T_period = V/R (eq. 1)"
                         + (f"; R(K) = R K/(K + K0) at K = {REFERENCE_PRODUCERS}, K0 = {p.drain_half_producers:.3g}"
                            if law and p.drain_half_producers is not None else "")))
    k = REFERENCE_PRODUCERS
    knees = fit.get("capacity_knees") or {}
    knee = knees.get(str(k)) or knees.get(k)
    value = format_bytes(p.capacity_bytes(k))
    if knee:
        lo, hi = knee["ci95_bytes"]
        value += f" (knee {format_bytes(knee['capacity_bytes'])}, 95% CI {_range(lo, hi, format_bytes)})"
    others = ", ".join(f"K={kk}: {format_bytes(p.capacity_bytes(int(kk)))}" for kk in sorted(knees, key=int)
                       if int(kk) != k)
    rows.append(Headline(f"Q(K={k}), capacity", value,
                         "model at the knee of the isolated-burst curve (eq. 7)" + (f"; other K: {others}" if others else "")))
    rows.append(Headline(f"T_iss0(K={k}, B={format_bytes(REFERENCE_BURST_BYTES)})", format_us(s["t_iss0_us"]),
                         "backpressure-free issue time, fitted on recovered plateaus"))
    drains = (p.provenance or {}).get("mechanisms_drain_rate_gbps") or {}
    ce = ((p.provenance or {}).get("baselines_gbps") or {}).get("ce-copy")
    rows.append(Headline("copy-engine ratio", "–" if s["ce_ratio"] is None else f"{s['ce_ratio']:.3f}",
                         "best store mechanism's drain over the copy engine's peer copy"
                         + (f" ({format_gbps(max(drains.values()))} / {format_gbps(ce)})" if drains and ce else "")))
    for model in dict.fromkeys((s["headline_model"], "mode-aware")):
        errors = s["heldout_errors_percent"].get(model)
        if not errors:
            continue
        for key, label in MODES:
            e = errors[key]
            name = MODEL_NAMES.get(model, model)
            rows.append(Headline(f"held-out {label}, {name} (n={e['n_points']})", _errors_value(e),
                                 "mean absolute percentage error on points the fit never saw"
                                 + ("; p90 and max (the slowest CTA's burst) issue against the DES's distribution"
                                    if model == "des" else "")))
    return rows


def dates_text(first_utc: str, last_utc: str) -> str:
    """``2026-11-29T19:40:46Z``, ``…T19:41:58Z`` -> ``2026-11-29 19:40–19:41 UTC`` (days apart: both days)."""
    (d0, _, t0), (d1, _, t1) = first_utc.rstrip("Z").partition("T"), last_utc.rstrip("Z").partition("T")
    if d0 == d1:
        return f"{d0} {t0[:5]}–{t1[:5]} UTC"
    return f"{d0} {t0[:5]} – {d1} {t1[:5]} UTC"


def _meta(rep: MicroReport) -> str:
    s = rep.summary
    when = s.get("records_time_utc")
    dates = dates_text(*when) if when else "undated"
    return (f"platform {rep.platform.name} ({rep.platform.status}) · link {s.get('link') or 'unknown'} · "
            f"{s['n_points']} store records ({s['mechanism']}) measured {dates} · DES engine {s['des_engine'] or 'off'}")


def _cell(value: float) -> float | None:
    return value if value == value else None


def point_rows(rep: MicroReport) -> list[list]:
    """The every-point table (times in µs, NaN left blank)."""
    rows = []
    for r in rep.rows:
        ma, des = r.predicted.get("mode-aware", {}), r.predicted.get("des", {})
        m = r.measured
        rows.append([r.kind, r.producers, format_bytes(r.burst_bytes), r.gap_us, "aligned" if r.aligned else "free",
                     "held-out" if r.heldout else "train", m["issue_mean"], m["issue_median"], m["issue_p90"],
                     _cell(m.get("issue_max", float("nan"))), ma.get("issue_us"), des.get("issue_us"),
                     des.get("issue_p90_us"), _cell(m["period_mean"]), ma.get("period_us"), des.get("period_us")])
    return rows


def section(rep: MicroReport, notes: list[str] = ()) -> Section:
    """The micro section of the report page (figures from the report and the shipped traces)."""
    from xsim.report import micro_traces
    from xsim.report.micro_figures import figures

    figs = figures(rep)
    figs.update(micro_traces.figures(rep.platform))
    captioned = [Figure(name, fig, CAPTIONS[name]) for name, fig in figs.items()]
    profile = rep.platform.to_dict()
    details = [Details(f"every point ({len(rep.rows)} records)",
                       f"<p>{BLANKS}</p>" + table_html(POINT_HEADER, point_rows(rep))),
               Details(f"the profile ({rep.platform.name})", json_html(profile)),
               Details("the raw summary (as --json prints it; errors in percent)", json_html(rep.summary))]
    return Section(title=f"micro: remote-store bursts, predicted vs measured on {rep.platform.name}",
                   meta=_meta(rep), headline=headline(rep), figures=captioned, details=details, notes=list(notes))
