"""The X-Stage inside the fused MoE kernel: rebuilt from the kernel's own stamps beside the DES's (report panel).

A platform may ship the fused kernel's traced runs (``calibration/records/<platform>-fused-traces/*.npz``,
``hwkernels.moe_bench --traces``: every tile's stamps and Combine bytes, over the host link and locally). For each
traced host run of a config the report measured, the DES runs the very table (checked tile for tile) with the
params and compute model the report predicted it with (one spread seed, the report's first), keeping q(t). The
panel sets the two X-Stages side by side: a figure of q(t) for the traced config whose speedup the DES misses
most, both schedules, and a table of every traced point (:mod:`xsim.moe.traces`: span, mean and peak bytes, the
share above the load gate, the link's idle share). Nothing is fitted to a trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from xsim.moe import traces
from xsim.report.moe import MoEReport

COLUMNS = (("span_us", "span us", "{:.0f}", 1.0), ("q_mean", "q mean KiB", "{:.0f}", 1024.0),
           ("q_max", "q max MiB", "{:.2f}", 2.0**20), ("above", "above gate", "{:.2f}", 1.0),
           ("idle", "link idle", "{:.2f}", 1.0))


@dataclass
class TracedPoint:
    config: str
    label: str             # the trace's schedule label: wave, int@<lead>
    schedule: str
    rebuilt: dict          # xsim.moe.traces.rebuilt
    simulated: dict        # xsim.moe.traces.simulated
    series: tuple          # (t_us, rebuilt bytes, simulated bytes), 10 us bins


def shipped_fused_traces(platform: str) -> tuple[dict, list[str]]:
    """(every array of the platform's shipped fused-kernel traces by key, their commits); empty if none."""
    from calibration.records import shipped_traces_dir

    folder = shipped_traces_dir(platform, "fused-traces")
    if folder is None:
        return {}, []
    arrays, commits = {}, set()
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".npz"):
            with resources.as_file(entry) as path, np.load(path) as data:
                arrays |= traces.merged([data])
                commits.add(str(data["commit"]) if "commit" in data.files else "")
    return arrays, sorted(c for c in commits if c)


def simulate_traced(params: dict, platform, mainloops, schedule: str, tiles: np.ndarray):
    """The DES of ``schedule``'s table for ``params`` on ``platform``, keeping q(t); None where that table is not
    the traced one (``tiles``)."""
    from xsim.builders import moe as builder
    from xsim.des import simulate

    cfg = builder.Config(params, platform, mainloops or None)
    table = cfg.table(schedule)
    if not np.array_equal(table.tiles, tiles):
        return None
    return simulate(cfg.workload(schedule, table), engine="fast", trace=True)


def traced_points(rep: MoEReport, arrays: dict) -> tuple[list[TracedPoint], list[str]]:
    """(every traced host run of a config in ``rep`` beside the DES of the same table, the traced runs left out
    because the report's table for them is not the traced one: a trace of an older scheduler or lead)."""
    rows = {r.config: r for r in rep.rows if r.params}
    gate = rep.platform.load_gate.threshold_bytes if rep.platform.load_gate is not None else float("inf")
    rate = rep.platform.drain_rate_gbps
    out, stale = [], []
    for key in traces.host_points(arrays):
        config, label = key.split("|")
        if config not in rows:
            continue
        schedule = "wave" if label == "wave" else "interleaved"
        tiles, stamps, nbytes = arrays[f"{key}|tiles"], arrays[f"{key}|host|stamps"], arrays[f"{key}|store_bytes"]
        result = simulate_traced(rows[config].params | {"spread_seeds": 1}, rep.platform, rep.mainloops, schedule,
                                 tiles)
        if result is None:
            stale.append(key)
            continue
        out.append(TracedPoint(config, label, schedule, traces.rebuilt(stamps, nbytes, rate, gate, tiles[:, 0]),
                               traces.simulated(result, gate, tiles[:, 0] == 1),
                               traces.occupancy_series(stamps, nbytes, rate, result)))
    return out, stale


def worst_config(rep: MoEReport, points: list[TracedPoint]) -> str | None:
    """The traced config (both schedules traced) whose speedup the DES misses most."""
    both = {p.config for p in points if p.schedule == "wave"} & {p.config for p in points if p.schedule != "wave"}
    rows = [r for r in rep.rows if r.config in both]
    return max(rows, key=lambda r: abs(r.speedup_predicted - r.speedup_measured)).config if rows else None


def occupancy_figure(rep: MoEReport, points: list[TracedPoint], config: str) -> go.Figure:
    """q(t) of ``config``'s traced runs, rebuilt and simulated, one panel per schedule."""
    mine = sorted((p for p in points if p.config == config), key=lambda p: p.schedule != "wave")
    fig = make_subplots(rows=len(mine), cols=1, shared_xaxes=False,
                        subplot_titles=[f"{p.label}: span {p.rebuilt['span_us']:.0f} us measured, "
                                        f"{p.simulated['span_us']:.0f} us DES" for p in mine])
    for i, p in enumerate(mine, start=1):
        t, measured, simulated = p.series
        fig.add_trace(go.Scatter(x=t, y=measured / 1024, name="rebuilt from the stamps", line=dict(color="#444"),
                                 showlegend=i == 1), row=i, col=1)
        fig.add_trace(go.Scatter(x=t, y=simulated / 1024, name="DES", line=dict(color="#1f77b4"), opacity=0.75,
                                 showlegend=i == 1), row=i, col=1)
        if rep.platform.load_gate is not None:
            fig.add_hline(y=rep.platform.load_gate.threshold_bytes / 1024, line=dict(color="gray", dash="dot"),
                          row=i, col=1)
        fig.update_yaxes(title_text="X-Stage (KiB)", row=i, col=1)
    fig.update_xaxes(title_text="us from the first tile's start", row=len(mine), col=1)
    fig.update_layout(title=f"X-Stage inside the fused kernel: {config}<br><sup>{rep.platform.name}; 10 us means; "
                            f"dotted: the load gate</sup>", template="plotly_white", width=900,
                      height=300 + 260 * len(mine), legend=dict(orientation="h", y=-0.12))
    return fig


def table_rows(points: list[TracedPoint]) -> list[list[str]]:
    return [[p.config, p.label, who, *(f.format(run[k] / div) for k, _, f, div in COLUMNS)]
            for p in points for who, run in (("rebuilt", p.rebuilt), ("DES", p.simulated))]


HEADER = ["config", "schedule", "X-Stage", *(name for _, name, _, _ in COLUMNS)]
