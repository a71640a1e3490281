"""The paper's Fig. 8 and Fig. 10 for our hardware, measured beside predicted (plotly figures).

Numbers come from :mod:`xsim.report.moe`; this module only draws them.
"""

from __future__ import annotations

import plotly.graph_objects as go

from xsim.report.moe import SCHEDULES, MoEReport

COLOR = {"wave": "#d62728", "interleaved": "#1f77b4"}


def _layout(fig: go.Figure, title: str, y: str) -> go.Figure:
    fig.update_layout(title=title, yaxis_title=y, template="plotly_white", width=900, height=560,
                      legend=dict(font=dict(size=10)), xaxis=dict(tickangle=-45, tickfont=dict(size=9)))
    return fig


def speedup_figure(rep: MoEReport) -> go.Figure:
    """Fig. 8: interleaved over expert-wave, measured and predicted, per config."""
    names = [r.config for r in rep.rows]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=names, y=[r.speedup_measured for r in rep.rows], name="measured"))
    fig.add_trace(go.Bar(x=names, y=[r.speedup_predicted for r in rep.rows], name="predicted (DES)"))
    fig.add_hline(y=1.0, line=dict(color="gray", dash="dot"))
    return _layout(fig, f"MoE kernel speedup, interleaved over expert waves ({rep.platform.name})", "speedup")


def span_figure(rep: MoEReport) -> go.Figure:
    """Fig. 10: Linear-2 remote-store span per config, wave vs interleaved (p10-median-p90)."""
    fig = go.Figure()
    names = [r.config for r in rep.rows]
    for schedule in SCHEDULES:
        med = [r.measured[schedule]["span"].get("median") for r in rep.rows]
        lo = [m - r.measured[schedule]["span"].get("p10", m) for m, r in zip(med, rep.rows)]
        hi = [r.measured[schedule]["span"].get("p90", m) - m for m, r in zip(med, rep.rows)]
        fig.add_trace(go.Scatter(x=names, y=med, mode="markers", name=f"measured {schedule} (p10-p90)",
                                 marker=dict(color=COLOR[schedule], size=9),
                                 error_y=dict(type="data", symmetric=False, array=hi, arrayminus=lo)))
        pred = [r.predicted.get(schedule, {}).get("span_us", {}).get("median") for r in rep.rows]
        fig.add_trace(go.Scatter(x=names, y=pred, mode="markers", name=f"predicted {schedule} median",
                                 marker=dict(color=COLOR[schedule], symbol="x", size=9)))
    fig.update_yaxes(type="log")
    return _layout(fig, "Linear-2 remote-store span per tile", "span (us)")


def figures(rep: MoEReport) -> dict[str, go.Figure]:
    if not rep.rows:
        return {}
    return {"fig8-speedup": speedup_figure(rep), "fig10-span": span_figure(rep)}
