"""The paper's Fig. 3 (a)-(d) for our hardware, measured beside predicted (plotly figures).

Numbers come from :mod:`xsim.report.micro`; this module only draws them. Markers are
measurements (aligned: circles, free-running: diamonds), lines are predictions from the one
calibrated platform.
"""

from __future__ import annotations

import plotly.graph_objects as go

from xsim.report.micro import REFERENCE_BURST_BYTES, REFERENCE_PRODUCERS, MicroReport, Row
from xsim.units import drain_time_us

MODE = {True: ("aligned", "circle", "#1f77b4"), False: ("free-running", "diamond", "#d62728")}
MODEL_STYLE = {"fluid": "dot", "mode-aware": "solid", "des": "dash"}
MIB = 2**20


def _layout(fig: go.Figure, title: str, x: str, y: str, log: bool = False) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white",
                      width=900, height=560, legend=dict(font=dict(size=10)))
    if log:
        fig.update_xaxes(type="log")
        fig.update_yaxes(type="log")
    return fig


def _markers(fig, rows: list[Row], x, key: str, aligned: bool, label: str, opacity: float = 1.0) -> None:
    name, symbol, color = MODE[aligned]
    fig.add_trace(go.Scatter(x=[x(r) for r in rows], y=[r.measured[key] for r in rows], mode="markers",
                             name=f"measured {label}, {name}", opacity=opacity,
                             marker=dict(symbol=symbol, color=color, size=8 if label == "mean" else 6,
                                         line=dict(width=1) if label == "mean" else None)))


def _line(fig, rows: list[Row], x, model: str, quantity: str, name: str, color: str) -> None:
    pts = sorted((x(r), r.predicted[model][quantity]) for r in rows
                 if model in r.predicted and quantity in r.predicted[model])
    if pts:
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines", name=name,
                                 line=dict(dash=MODEL_STYLE[model], color=color)))


def _gap_rows(rep: MicroReport, aligned: bool) -> list[Row]:
    return sorted((r for r in rep.rows if r.kind == "periodic" and r.aligned == aligned
                   and r.producers == REFERENCE_PRODUCERS and r.burst_bytes == REFERENCE_BURST_BYTES),
                  key=lambda r: r.gap_us)


def fig_a_issue_vs_gap(rep: MicroReport) -> go.Figure:
    fig = go.Figure()
    gap = lambda r: r.gap_us  # noqa: E731
    for aligned in (True, False):
        rows = _gap_rows(rep, aligned)
        for key, label, op in (("issue_mean", "mean", 1.0), ("issue_median", "median", 0.6), ("issue_p90", "p90", 0.4)):
            _markers(fig, rows, gap, key, aligned, label, op)
        name, _, color = MODE[aligned]
        for model in ("mode-aware", "des", "fluid"):
            _line(fig, rows, gap, model, "issue_us", f"{model} ({name})", color)
    return _layout(fig, f"(a) issue time vs gap, K={REFERENCE_PRODUCERS}, B={REFERENCE_BURST_BYTES // 1024} KiB",
                   "gap G (µs)", "issue time per producer (µs)")


def fig_b_period_vs_gap(rep: MicroReport) -> go.Figure:
    fig = go.Figure()
    gap = lambda r: r.gap_us  # noqa: E731
    for aligned in (True, False):
        rows = _gap_rows(rep, aligned)
        _markers(fig, rows, gap, "period_mean", aligned, "mean")
        _markers(fig, rows, gap, "period_median", aligned, "median", 0.5)
        name, _, color = MODE[aligned]
        for model in ("mode-aware", "des", "fluid"):
            _line(fig, rows, gap, model, "period_us", f"{model} ({name})", color)
    return _layout(fig, "(b) period vs gap: max(T_iss0 + G_eff, V/R)", "gap G (µs)", "period (µs)")


def fig_c_isolated_vs_volume(rep: MicroReport) -> go.Figure:
    fig = go.Figure()
    vol = lambda r: r.volume_bytes / MIB  # noqa: E731
    ks = sorted({r.producers for r in rep.rows if r.kind == "isolated"})
    palette = ["#1f77b4", "#2ca02c", "#ff7f0e", "#d62728", "#9467bd"]
    for i, k in enumerate(ks):
        rows = sorted((r for r in rep.rows if r.kind == "isolated" and r.producers == k), key=lambda r: r.volume_bytes)
        color = palette[i % len(palette)]
        fig.add_trace(go.Scatter(x=[vol(r) for r in rows], y=[r.measured["issue_mean"] for r in rows], mode="markers",
                                 name=f"K={k} measured mean", marker=dict(color=color, size=8)))
        fig.add_trace(go.Scatter(x=[vol(r) for r in rows], y=[r.measured["issue_median"] for r in rows],
                                 mode="markers", name=f"K={k} measured median",
                                 marker=dict(color=color, size=6, symbol="x")))
        _line(fig, rows, vol, "mode-aware", "issue_us", f"K={k} eq. 7 max(T_iss0, (V-Q)/R)", color)
        q = rep.platform.capacity_bytes(k) / MIB
        fig.add_vline(x=q, line=dict(color=color, dash="dot", width=1))
    return _layout(fig, "(c) isolated burst: issue vs volume, knee at Q(K) (dotted)", "burst volume V (MiB)",
                   "issue time (µs)", log=True)


def fig_d_period_vs_volume(rep: MicroReport) -> go.Figure:
    fig = go.Figure()
    vol = lambda r: r.volume_bytes / MIB  # noqa: E731
    zero = [r for r in rep.rows if r.kind == "periodic" and r.gap_us == 0]
    for aligned in (True, False):
        name, symbol, _ = MODE[aligned]
        for k in sorted({r.producers for r in zero}):
            rows = sorted((r for r in zero if r.aligned == aligned and r.producers == k), key=lambda r: r.volume_bytes)
            fig.add_trace(go.Scatter(x=[vol(r) for r in rows], y=[r.measured["period_mean"] for r in rows],
                                     mode="markers", name=f"K={k} {name}", marker=dict(symbol=symbol, size=8)))
    v = sorted({r.volume_bytes for r in zero})
    r_gbps = rep.platform.drain_rate_gbps
    fig.add_trace(go.Scatter(x=[x / MIB for x in v], y=[drain_time_us(x, r_gbps) for x in v], mode="lines",
                             name=f"V/R, R = {r_gbps:.1f} GB/s", line=dict(color="black")))
    return _layout(fig, "(d) zero-gap period vs volume across K x B splits", "burst volume V (MiB)",
                   "period (µs)", log=True)


PANELS = {"a_issue_vs_gap": fig_a_issue_vs_gap, "b_period_vs_gap": fig_b_period_vs_gap,
          "c_isolated_vs_volume": fig_c_isolated_vs_volume, "d_period_vs_volume": fig_d_period_vs_volume}


def figures(rep: MicroReport) -> dict[str, go.Figure]:
    return {name: draw(rep) for name, draw in PANELS.items()}
