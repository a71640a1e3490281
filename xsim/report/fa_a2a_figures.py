"""The paper's Fig. 11 for our hardware (plotly); the page section is :mod:`xsim.report.fa_a2a_page`.

Numbers come from :mod:`xsim.report.fa_a2a`; this module only draws them. Markers are
measurements, lines predictions from the one calibrated platform: E_res(M) / T_FA(M) for the
fused kernel and E_cc(M) / T_FA(M) for the completion-coupled counterfactual, with the issue
floor, the +-2 % DVFS band and the predicted threshold M_ub*.
"""

from __future__ import annotations

import math
import plotly.graph_objects as go

from xsim.report.fa_a2a import FaA2aReport
from xsim.report.fa_a2a_points import Series
from xsim.report.fa_a2a_summary import DVFS_BAND

STYLE = {"closed-form": "solid", "des": "dash"}


def fig11(s: Series, platform_name: str, relative: bool = True) -> go.Figure:
    """E_res and E_cc against M: over T_FA in percent (the paper's Fig. 11), or in microseconds
    (``relative=False``: the slope test, flat at the floor for X-Stage, growing for cc)."""
    pts = [p for p in s.points if math.isfinite(p.get("fa-only"))]
    m = [p.seq_len for p in pts]
    fa = [p.get("fa-only") for p in pts]

    def _pct(value: float, t_fa: float) -> float:
        if not (math.isfinite(value) and t_fa > 0):
            return math.nan
        return 100.0 * value / t_fa if relative else value

    fig = go.Figure()
    band = [DVFS_BAND * (100.0 if relative else t) for t in fa]
    fig.add_trace(go.Scatter(x=m + m[::-1], y=band + [-b for b in band[::-1]],
                             mode="lines", fill="toself", fillcolor="rgba(31,119,180,0.12)", line=dict(width=0),
                             name="+-2 % DVFS band"))
    fig.add_trace(go.Scatter(x=m, y=[_pct(p.floor_us, t) for p, t in zip(pts, fa)], mode="lines",
                             line=dict(dash="dot", color="gray"), name="issue floor"))
    for name, attr, color in (("fused E_res", "e_res_us", "#1f77b4"), ("cc E_cc", "e_cc_us", "#d62728")):
        fig.add_trace(go.Scatter(x=m, y=[_pct(getattr(p, attr), t) for p, t in zip(pts, fa)], mode="markers",
                                 marker=dict(size=9, color=color), name=f"measured {name}"))
        for model, dash in STYLE.items():
            ys = [_pct(p.predicted.get(model, {}).get(attr, math.nan), t) for p, t in zip(pts, fa)]
            if any(math.isfinite(y) for y in ys):
                fig.add_trace(go.Scatter(x=m, y=ys, mode="lines", line=dict(dash=dash, color=color),
                                         name=f"predicted {name} ({model})"))
    atomic = [_pct(p.get("cc-atomic") - p.get("fa-only"), t) for p, t in zip(pts, fa)]
    if any(math.isfinite(y) for y in atomic):
        fig.add_trace(go.Scatter(x=m, y=atomic, mode="markers",
                                 marker=dict(size=7, color="#d62728", symbol="diamond-open"),
                                 name="measured cc E_cc (release atomic)"))
    des = (s.summary.get("m_ub_star_predicted_by_model") or {}).get("des")
    for x, color, dash, name in ((s.summary.get("m_ub_star_predicted"), "black", "dashdot", "M_ub* predicted (eq. 20)"),
                                 (des, "purple", "dash", "threshold predicted (DES)"),
                                 (s.summary.get("m_ub_star_measured"), "green", "dot", "threshold measured")):
        if x:   # a vertical line, named in the legend (PNG exports drop vline annotations)
            fig.add_vline(x=x, line=dict(color=color, dash=dash))
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color=color, dash=dash),
                                     name=f"{name}: {x:.0f}"))
    k = s.key
    what = "residual over FA-only time" if relative else "residual (us)"
    fig.update_layout(title=f"Fig. 11 on {platform_name}: {what} (d={k['head_dim']}, "
                            f"b_m={k['block_m']}, N={k['sp']}, {k['destination']}, {k.get('mainloop', 'triton')})",
                      xaxis_title="sequence length M (tokens)", yaxis_title="E / T_FA (%)" if relative else "E (us)",
                      template="plotly_white", width=900, height=560, legend=dict(font=dict(size=10)))
    fig.update_xaxes(type="log")
    return fig


def figures(rep: FaA2aReport) -> dict[str, go.Figure]:
    out = {}
    for s in rep.series:
        name = f"fig11-d{s.key['head_dim']}-bm{s.key['block_m']}-n{s.key['sp']}-{s.key['destination']}"
        if s.key.get("mainloop", "triton") != "triton":
            name += f"-{s.key['mainloop']}"
        if s.key.get("stagger_us"):
            name += "-stagger" + f"{s.key['stagger_us']:g}".replace(".", "p") + "us"   # 82.6 -> 82p6: a file name
        out[name] = fig11(s, rep.platform.name)
        out[f"{name}-us"] = fig11(s, rep.platform.name, relative=False)
    return out
