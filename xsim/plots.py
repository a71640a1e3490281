"""Plotly figures of one simulation: q(t) per X-Stage and a per-producer timeline."""

from __future__ import annotations

import numpy as np

from xsim.des.result import SimResult


def qtrace_figure(result: SimResult, title: str = "X-Stage occupancy q(t)"):
    import plotly.graph_objects as go

    fig = go.Figure()
    for gpu, trace in enumerate(result.traces):
        if trace is None:
            continue
        t, q = trace
        fig.add_trace(go.Scatter(x=np.asarray(t, dtype=np.float32), y=np.asarray(q / 2**20, dtype=np.float32),
                                 mode="lines", name=f"GPU {gpu}"))
        cap = result.workload.xstages[gpu].capacity_bytes / 2**20
        fig.add_hline(y=cap, line_dash="dot", annotation_text=f"Q = {cap:.3g} MiB")
    fig.update_layout(title=title, xaxis_title="time (µs)", yaxis_title="outstanding (MiB)")
    return fig


SPANS = (("mainloop", "mainloop_start", "mainloop_end", "#4C78A8", 1.0),
         ("issue", "issue_start", "issue_end", "#F58518", 1.0),
         ("post-issue drain", "issue_end", "drain_end", "#BAB0AC", 0.6))


def producer_groups(n_producers: int, group_size: int) -> list[range]:
    """Consecutive producers, ``group_size`` at a time (the timeline's menu entries)."""
    if group_size < 1:
        raise ValueError(f'"group_size" must be >= 1, got {group_size!r}')
    return [range(lo, min(lo + group_size, n_producers)) for lo in range(0, n_producers, group_size)]


def _span_traces(go, result: SimResult, group: range, visible: bool) -> list:
    w, t = result.workload, result.times
    in_group = (w.producer >= group.start) & (w.producer < group.stop)
    traces = []
    for name, start_key, end_key, color, opacity in SPANS:
        shown = np.flatnonzero(in_group & (getattr(t, end_key) > getattr(t, start_key)))  # no empty bars
        start, end = getattr(t, start_key)[shown], getattr(t, end_key)[shown]
        traces.append(go.Bar(  # float32 and 1-D arrays: plotly stores them as compact binary
            y=w.producer[shown].astype(np.int32), x=(end - start).astype(np.float32),
            base=start.astype(np.float32), orientation="h", name=name, legendgroup=name,
            showlegend=group.start == 0, visible=visible, marker_color=color, opacity=opacity,
            customdata=w.burst_index[shown].astype(np.int32),
            hovertemplate="P%{y}, tile %{customdata}<br>%{base:.3f} .. +%{x:.3f} µs<extra>" + name + "</extra>"))
    return traces


def timeline_figure(result: SimResult, group_size: int = 16, title: str = "per-producer timeline"):
    """Mainloop, issue and post-issue drain spans per producer (Gantt-style bars).

    With more than ``group_size`` producers, a menu picks which ``group_size`` are shown
    (the first group at first); every group's bars are in the figure, so it works offline.
    """
    import plotly.graph_objects as go

    groups = producer_groups(result.workload.n_producers, group_size)
    fig = go.Figure()
    for i, group in enumerate(groups):
        for trace in _span_traces(go, result, group, visible=i == 0):
            fig.add_trace(trace)
    per = len(SPANS)
    if len(groups) > 1:
        buttons = [dict(label=f"producers P{g.start}–P{g.stop - 1}", method="update",
                        args=[{"visible": [j // per == i for j in range(per * len(groups))]},
                              {"yaxis.range": [g.stop - 0.5, g.start - 0.5]}])
                   for i, g in enumerate(groups)]
        fig.update_layout(updatemenus=[dict(buttons=buttons, direction="down", x=1.0, xanchor="right", y=1.12,
                                            yanchor="top", showactive=True)])
    first = groups[0] if groups else range(0)
    fig.update_layout(title=title, barmode="overlay", xaxis_title="time (µs)", yaxis_title="producer",
                      yaxis_range=[first.stop - 0.5, first.start - 0.5], yaxis_dtick=1 if group_size <= 32 else None,
                      height=max(360, 22 * min(group_size, max(len(first), 1)) + 160))
    return fig


def busy_figure(result: SimResult, bin_us: float):
    import plotly.graph_objects as go

    t, busy = result.busy_fraction(bin_us)
    fig = go.Figure(go.Scatter(x=t, y=busy * 100, mode="lines", line_shape="hv"))
    fig.update_layout(title="Tensor-core busy (share of producers in a mainloop)", xaxis_title="time (µs)",
                      yaxis_title="busy (%)", yaxis_range=[0, 105])
    return fig
