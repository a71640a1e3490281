"""What the per-burst traces show that the statistics hide: unfair service and phase drift.

Traces (``calibration/records/<platform>-traces/*.npz``: ``start_us``/``end_us`` [runs, producers, bursts]
and a JSON ``meta``) are shipped beside the records. Two panels for the report:

- (e) per-producer mean issue time of the backpressured aligned burst (K=132, B=32 KiB),
  sorted, against the fluid value ``(V - Q)/R`` and the burst span (first start to last end);
- (f) phase drift: the spread (std) of burst start times across producers, per burst index,
  free-running vs aligned, at each traced gap.
"""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import plotly.graph_objects as go

from xsim.platform import Platform
from xsim.units import drain_time_us


def shipped_traces(platform: str) -> dict[str, dict]:
    """name -> {"meta", "start_us", "end_us"} for every shipped trace of a platform (empty if none)."""
    from calibration.records import shipped_traces_dir

    folder = shipped_traces_dir(platform)
    out = {}
    if folder is None:
        return out
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".npz"):
            continue
        with resources.as_file(entry) as path, np.load(path) as data:
            out[entry.name[:-4]] = {"meta": json.loads(str(data["meta"])), "start_us": data["start_us"].astype(float),
                                    "end_us": data["end_us"].astype(float)}
    return out


def _pick(traces: dict, **want) -> list[tuple[str, dict]]:
    return [(n, t) for n, t in traces.items() if all(t["meta"].get(k) == v for k, v in want.items())]


def per_producer_issue(trace: dict) -> tuple[np.ndarray, float]:
    """Mean issue time per producer over timed bursts and runs, and the mean burst span."""
    w = int(trace["meta"]["warmup_bursts"])
    issue = (trace["end_us"] - trace["start_us"])[:, :, w:]
    span = (trace["end_us"].max(axis=1) - trace["start_us"].min(axis=1))[:, w:]
    return issue.mean(axis=(0, 2)), float(span.mean())


def start_spread(trace: dict) -> np.ndarray:
    """Std over producers of each burst's start time, averaged over runs, per burst index."""
    s = trace["start_us"]
    return (s - s.mean(axis=1, keepdims=True)).std(axis=1).mean(axis=0)


def fig_e_unfair_service(traces: dict, platform: Platform) -> go.Figure | None:
    found = _pick(traces, kind="isolated", aligned=True, producers=132, burst_bytes=32 * 1024, mechanism="st.v4")
    if not found:
        return None
    _, trace = found[0]
    issue, span = per_producer_issue(trace)
    k, b = 132, 32 * 1024
    fluid = max(platform.t_iss0_us(k, b), drain_time_us(k * b - platform.capacity_bytes(k), platform.drain_rate_gbps))
    order = np.argsort(issue)
    fig = go.Figure(go.Bar(x=list(range(k)), y=issue[order], name="per-producer mean issue (sorted)"))
    fig.add_hline(y=fluid, line=dict(color="black"), annotation_text=f"fluid (V-Q)/R = {fluid:.2f} µs")
    fig.add_hline(y=span, line=dict(color="red", dash="dash"), annotation_text=f"burst span = {span:.2f} µs")
    fig.update_layout(title="(e) unfair service: isolated aligned burst, K=132, B=32 KiB (V > Q)", template="plotly_white",
                      xaxis_title="producer (sorted by issue time)", yaxis_title="issue time (µs)", width=900, height=560)
    return fig


def fig_f_phase_drift(traces: dict) -> go.Figure | None:
    found = _pick(traces, kind="periodic", producers=132, burst_bytes=32 * 1024, mechanism="st.v4", target="remote")
    if not found:
        return None
    fig = go.Figure()
    for name, trace in sorted(found, key=lambda nt: (nt[1]["meta"]["aligned"], nt[1]["meta"]["gap_us"])):
        m = trace["meta"]
        fig.add_trace(go.Scatter(y=start_spread(trace), mode="lines",
                                 name=f"G={m['gap_us']:g} µs, {'aligned' if m['aligned'] else 'free-running'}",
                                 line=dict(dash="solid" if not m["aligned"] else "dot")))
    fig.update_layout(title="(f) phase drift: spread of burst start times across producers (K=132, 32 KiB)",
                      template="plotly_white", xaxis_title="burst index", yaxis_title="std of start time (µs)",
                      yaxis_type="log", width=900, height=560)
    return fig


def figures(platform: Platform, traces: dict | None = None) -> dict[str, go.Figure]:
    traces = shipped_traces(platform.name) if traces is None else traces
    out = {"e_unfair_service": fig_e_unfair_service(traces, platform), "f_phase_drift": fig_f_phase_drift(traces)}
    return {k: v for k, v in out.items() if v is not None}
