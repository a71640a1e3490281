"""FA + A2A at the power cap's clock: the ``fa_a2a`` builder's runs with ``clock_law = "records"``.

At the cap a kernel's SM clock follows its busy fraction (:class:`~xsim.attention.clock.ClockLaw`,
fitted once on the platform's shipped duty records, :func:`calibration.power.shipped_clock_law`).
The scenario's Q-loop is FA-only's at FA-only's own clock at the cap, ``fa_clock_mhz`` (0: the law's
anchor at M, FA-only alone in the same duty runs). Every other variant computes the same tiles and
waits on the link part of the time, so it clocks higher and its Q-loops take s = f_FA / f of
FA-only's: the DES runs it with every Q-loop scaled by s, and :func:`~xsim.attention.clock.solve`
finds s and the time together. That is the report's "des" model (:mod:`xsim.report.fa_a2a`), which
anchors on a measured FA-only time and clock instead of the modeled ones. The stagger, a
``%globaltimer`` wait, does not scale with the clock.
"""

from __future__ import annotations

from xsim.attention.clock import ClockLaw, solve
from xsim.platform import Platform


def scaled(params: dict, s: float) -> dict:
    """The point with every Q-loop ``s`` times as long (its clock f_FA / s)."""
    return {**params, "sigma_us_per_kv_tile": params["sigma_us_per_kv_tile"] * s,
            "qloop_fixed_us": params["qloop_fixed_us"] * s}


def law_of(platform: Platform) -> ClockLaw:
    from calibration.power import PowerFitError, shipped_clock_law

    try:
        return shipped_clock_law(platform.name)
    except PowerFitError as exc:
        raise ValueError(f"clock_law records on {platform.name}: {exc}") from None


def simulate(params: dict, platform: Platform, engine: str, trace: bool):
    """(the run at the solved clock, its summary): ``kernel_us`` and the distributions of that run,
    ``t_fa_model_us`` and ``e_res_us`` as at a fixed clock (over the modeled FA-only at its own clock),
    and a ``clock`` section; its ``fa_only_des_us`` (FA-only's DES time at its clock: the same tiles, the
    same per-tile spread) is the busy fraction's reference, so FA-only itself keeps its clock."""
    from xsim.builders import fa_a2a as builder
    from xsim.des import simulate as run

    law = law_of(platform)
    m = params["seq_len"]
    f_fa = params["fa_clock_mhz"] or law.anchor_mhz(m)
    runs, order = {}, []

    def kernel_us(p: dict, s: float) -> float:
        key = (p["variant"], s)
        if key not in runs:
            q = scaled(p, s)
            result = run(builder.build(q, platform), engine=engine, trace=trace and p["variant"] == params["variant"])
            runs[key] = result, builder.summarize(result, q)
        return runs[key][1]["kernel_us"]["mean"]

    fa_only = {**params, "variant": "fa-only"}
    t_fa = kernel_us(fa_only, 1.0)   # FA-only's DES time, its spread's tail in: the busy fraction's reference

    def residual(s: float) -> float:
        order.append(s)
        return kernel_us(params, s) - t_fa * s

    t, f = solve(law, t_fa, f_fa, m, residual)
    result, summary = runs[params["variant"], order[-1]]
    clock = {"law": "records", "beta": law.beta, "source": law.source, "fa_only_mhz": f_fa,
             "fa_only_from": "fa_clock_mhz" if params["fa_clock_mhz"] else "the law's anchor",
             "ceiling_mhz": law.ceiling_mhz(m), "predicted_mhz": f, "qloop_scale": order[-1],
             "kernel_fixed_clock_us": kernel_us(params, 1.0), "fa_only_des_us": t_fa, "iterations": len(order)}
    t_model = builder.t_fa_model_us(params)   # as without the law: E_res over the modeled FA-only at its clock
    return result, {**summary, "t_fa_model_us": t_model, "e_res_us": t - t_model, "clock": clock}
