"""Plotly figures of one simulation: q(t) per X-Stage and a per-producer timeline."""

from __future__ import annotations

import numpy as np

from xsim.des.result import SimResult
from xsim.units import MIB


def qtrace_figure(result: SimResult, title: str = "X-Stage occupancy q(t)"):
    import plotly.graph_objects as go

    fig = go.Figure()
    for gpu, trace in enumerate(result.traces):
        if trace is None:
            continue
        t, q = trace
        fig.add_trace(go.Scatter(x=t, y=q / MIB, mode="lines", name=f"GPU {gpu}"))
        cap = result.workload.xstages[gpu].capacity_bytes / MIB
        fig.add_hline(y=cap, line_dash="dot", annotation_text=f"Q = {cap:.3g} MiB")
    fig.update_layout(title=title, xaxis_title="time (us)", yaxis_title="outstanding (MiB)")
    return fig


def timeline_figure(result: SimResult, max_producers: int = 16, title: str = "per-producer timeline"):
    """Mainloop and issue spans of the first ``max_producers`` producers (Gantt-style bars)."""
    import plotly.graph_objects as go

    w, t = result.workload, result.times
    shown = np.flatnonzero(w.producer < max_producers)
    fig = go.Figure()
    spans = (("mainloop", t.mainloop_start, t.mainloop_end, "#4C78A8"),
             ("issue", t.issue_start, t.issue_end, "#F58518"),
             ("post-issue drain", t.issue_end, t.drain_end, "#BAB0AC"))
    for name, start, end, color in spans:
        fig.add_trace(go.Bar(
            y=[f"P{p}" for p in w.producer[shown]], x=(end - start)[shown], base=start[shown],
            orientation="h", name=name, marker_color=color, opacity=0.6 if name.startswith("post") else 1.0,
            customdata=np.stack([w.burst_index[shown], w.bytes[shown]], axis=1),
            hovertemplate="tile %{customdata[0]}, %{customdata[1]:.0f} B<br>%{base:.3f} .. +%{x:.3f} us",
        ))
    fig.update_layout(title=title, barmode="overlay", xaxis_title="time (us)", yaxis_title="producer",
                      yaxis_autorange="reversed")
    return fig


def busy_figure(result: SimResult, bin_us: float):
    import plotly.graph_objects as go

    t, busy = result.busy_fraction(bin_us)
    fig = go.Figure(go.Scatter(x=t, y=busy * 100, mode="lines", line_shape="hv"))
    fig.update_layout(title="Tensor-core busy (share of producers in a mainloop)", xaxis_title="time (us)",
                      yaxis_title="busy (%)", yaxis_range=[0, 105])
    return fig
