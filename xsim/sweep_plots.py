"""Figures of a sweep: lines for one axis, heatmaps for two, the closed form's G* overlaid.

Each figure is one self-contained HTML file (plotly.js inlined), readable offline.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

# (row key, title) of the panels; a key missing from the rows is left out
PANELS = (
    ("pred_delta_t_issue_us", "predicted issue overhead ΔT_iss (µs), eq. 4"),
    ("pred_issue_us", "predicted issue time T_iss (µs), eq. 3"),
    ("issue_us_mean", "simulated issue time, mean (µs)"),
    ("period_us_mean", "simulated period, mean (µs)"),
    ("stall_us_mean", "critical-path stall per tile, mean (µs)"),
    ("kernel_us_mean", "simulated kernel time per launch, mean (µs)"),                  # fa_a2a
    ("e_res_us", "residual over the modeled FA-only E_res (µs)"),
    ("clock_predicted_mhz", "SM clock by the power cap's law (MHz)"),
    ("wave_kernel_us", "expert-wave kernel time (µs)"),                                  # moe, both schedules
    ("interleaved_kernel_us", "interleaved kernel time (µs)"),
    ("speedup", "speedup, interleaved over expert waves"),
)
GAP_KEY, G_STAR_KEY = "gap_us", "pred_g_star_us"


def _column(rows: list[dict], key: str) -> np.ndarray:
    return np.array([np.nan if r.get(key) is None else float(r[key]) for r in rows])


def _axis(rows: list[dict], key: str) -> np.ndarray:
    """A swept key's values: floats when numeric, else the labels themselves."""
    values = [r[key] for r in rows]
    if all(isinstance(v, (int, float)) for v in values):
        return np.array(values, dtype=float)
    return np.array([str(v) for v in values], dtype=object)


def _panels(rows: list[dict]) -> list[tuple[str, str]]:
    return [(k, t) for k, t in PANELS if any(r.get(k) is not None for r in rows)]


def line_figure(rows: list[dict], x_key: str):
    """One panel per quantity against the swept key; simulated and predicted side by side."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    order = np.argsort(_axis(rows, x_key), kind="stable")
    rows = [rows[i] for i in order]
    x = _axis(rows, x_key)
    panels = _panels(rows)
    fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, subplot_titles=[t for _, t in panels])
    for n, (key, title) in enumerate(panels, start=1):
        fig.add_trace(go.Scatter(x=x, y=_column(rows, key), mode="lines+markers", name=key), row=n, col=1)
        if key == "issue_us_mean":
            for band in ("issue_us_p10", "issue_us_p90"):
                fig.add_trace(go.Scatter(x=x, y=_column(rows, band), mode="lines", name=band,
                                         line=dict(dash="dot", width=1)), row=n, col=1)
    g_star = _column(rows, G_STAR_KEY)
    if x_key == GAP_KEY and np.isfinite(g_star).any():  # G* does not depend on the gap
        for value in np.unique(g_star[np.isfinite(g_star)]):
            fig.add_vline(x=value, line_dash="dash", annotation_text=f"G* = {value:.3g} µs")
    elif np.isfinite(g_star).any():
        fig.add_trace(go.Scatter(x=x, y=g_star, mode="lines", name="G* (µs), eq. 5", line=dict(dash="dash")),
                      row=1, col=1)
    fig.update_xaxes(title_text=x_key, row=len(panels), col=1)
    fig.update_layout(height=280 * len(panels), title=f"sweep over {x_key}")
    return fig


def heatmap_figure(rows: list[dict], x_key: str, y_key: str):
    """A heatmap per quantity over the two swept keys; the G* line where gap_us is an axis."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    xs, ys = np.unique(_axis(rows, x_key)), np.unique(_axis(rows, y_key))
    panels = _panels(rows)
    fig = make_subplots(rows=(len(panels) + 1) // 2, cols=2, subplot_titles=[t for _, t in panels],
                        horizontal_spacing=0.12, vertical_spacing=0.12)
    ix = {v: i for i, v in enumerate(xs)}
    iy = {v: i for i, v in enumerate(ys)}
    for n, (key, _) in enumerate(panels):
        grid = np.full((len(ys), len(xs)), np.nan)
        for r, x, y in zip(rows, _axis(rows, x_key), _axis(rows, y_key)):
            grid[iy[y], ix[x]] = np.nan if r.get(key) is None else r[key]
        row, col = n // 2 + 1, n % 2 + 1
        fig.add_trace(go.Heatmap(x=xs, y=ys, z=grid, colorscale="Viridis", showscale=False, name=key,
                                 hovertemplate=f"{x_key}=%{{x}}<br>{y_key}=%{{y}}<br>{key}=%{{z:.4g}}<extra></extra>"),
                      row=row, col=col)
        _overlay_g_star(fig, rows, x_key, y_key, row, col, show_legend=n == 0)
        fig.update_xaxes(title_text=x_key, row=row, col=col)
        fig.update_yaxes(title_text=y_key, row=row, col=col)
    fig.update_layout(height=420 * ((len(panels) + 1) // 2), title=f"sweep over {x_key} × {y_key}")
    return fig


def _overlay_g_star(fig, rows, x_key, y_key, row, col, show_legend):
    """Where gap_us is an axis, G* as a function of the other axis: the recovery boundary."""
    import plotly.graph_objects as go

    if GAP_KEY not in (x_key, y_key) or not any(r.get(G_STAR_KEY) is not None for r in rows):
        return
    other = y_key if x_key == GAP_KEY else x_key
    o, g = _axis(rows, other), _column(rows, G_STAR_KEY)
    keep = np.isfinite(g)
    levels = sorted({(a, b) for a, b in zip(o[keep], g[keep])})
    other_v, g_v = [a for a, _ in levels], [b for _, b in levels]
    x, y = (g_v, other_v) if x_key == GAP_KEY else (other_v, g_v)
    fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name="G* (eq. 5)", showlegend=show_legend,
                             line=dict(color="white", dash="dash", width=2)), row=row, col=col)


def write_figures(rows: list[dict], axes: list[str], out_dir: Path) -> list[Path]:
    """sweep.html for a 1-D or 2-D sweep (first two axes, when more); returns what was written."""
    if not rows or not axes or not _panels(rows):
        return []
    if len(axes) == 1 or len({r[axes[1]] for r in rows}) == 1:
        fig = line_figure(rows, axes[0])
    else:
        first = {a: rows[0][a] for a in axes[2:]}
        rows = [r for r in rows if all(r[a] == v for a, v in first.items())]
        fig = heatmap_figure(rows, axes[0], axes[1])
    from xsim.fileio import atomic_path

    path = out_dir / "sweep.html"
    with atomic_path(path, "sweep plot") as tmp:
        fig.write_html(tmp, include_plotlyjs=True, config={"displaylogo": False})  # offline: no link to plotly.com
    return [path]
