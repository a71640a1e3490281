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


def _box(fig, names, stats, name, color, opacity):
    get = lambda k: [st.get(k) for st in stats]  # noqa: E731
    fig.add_trace(go.Box(x=names, q1=get("p10"), median=get("median"), q3=get("p90"), lowerfence=get("min"),
                         upperfence=get("max"), name=name, marker_color=color, opacity=opacity))


def span_figure(rep: MoEReport) -> go.Figure:
    """Fig. 10: Linear-2 remote-store span per config, wave vs interleaved, measured and predicted.

    Boxes span p10-p90 around the median, whiskers min-max (the records keep these statistics).
    """
    fig = go.Figure()
    names = [r.config for r in rep.rows]
    for schedule in SCHEDULES:
        _box(fig, names, [r.measured[schedule]["span"] for r in rep.rows], f"measured {schedule}",
             COLOR[schedule], 1.0)
        _box(fig, names, [r.predicted.get(schedule, {}).get("span_us", {}) for r in rep.rows],
             f"predicted {schedule} (DES)", COLOR[schedule], 0.45)
    fig.update_layout(boxmode="group")
    fig.update_yaxes(type="log")
    return _layout(fig, "Linear-2 remote-store span per tile (box p10-p90, whiskers min-max)", "span (us)")


def figures(rep: MoEReport) -> dict[str, go.Figure]:
    if not rep.rows:
        return {}
    return {"moe_fig8_speedup": speedup_figure(rep), "moe_fig10_span": span_figure(rep)}
