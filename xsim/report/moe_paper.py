"""The paper's Table 2 rows predicted on paper-8gpu from shapes alone, beside its measurements.

For each of the seven models (W8A8, skewed routing, 55,808 tokens, EP = 8): the closed form
(eqs. 11-15 with the roofline compute model of the paper's GPU, an assumption) and, when
asked, the DES; then both again with the paper's own measured mainloop medians substituted,
which tests the X-Stage model alone, apart from the compute model. Stalls are per Linear-2
tile (the paper's Table 2 rows are Linear-2 tiles): the DES's wait for a staging slot.
"""

from __future__ import annotations

from xsim.builders import moe as builder
from xsim.moe.families import PAPER_MODELS, PAPER_TABLE2, PAPER_TOKENS
from xsim.platform import resolve_platform
from xsim.scenario import load_scenario


def paper_table2(des: bool, engine: str = "fast") -> list[dict]:
    platform = resolve_platform("paper-8gpu")
    rows = []
    for model in PAPER_MODELS:
        params = dict(load_scenario(f"moe8-{model}-fp8-zipf-{PAPER_TOKENS}").params)
        paper = PAPER_TABLE2[model]
        shapes = builder.predict(params, platform)
        with_mma = builder.predict(params, platform, mainloops_us=paper["t_mma"])
        row = {
            "model": model,
            "paper_span_us": list(paper["span"]), "paper_t_mma_us": list(paper["t_mma"]),
            "paper_stall_wave_us": list(paper["wave"]), "paper_stall_int_us": list(paper["int"]),
            "model_t_mma_us": [shapes["t_l2_us"], shapes["t_l1_us"]],
            "closed_span_us": [shapes["span_wave_us"], shapes["span_int_us"]],
            "closed_stall_us": [shapes["stall_wave_us"], shapes["stall_int_us"]],
            "closed_paper_mma_span_us": [with_mma["span_wave_us"], with_mma["span_int_us"]],
            "closed_paper_mma_stall_us": [with_mma["stall_wave_us"], with_mma["stall_int_us"]],
            "eq14_wave_ok": shapes["eq14_wave_ok"], "eq14_int_ok": shapes["eq14_int_ok"],
        }
        if des:
            for tag, mma in (("des", None), ("des_paper_mma", paper["t_mma"])):
                _, s = builder.simulate(params, platform, engine, trace=False, mainloops_us=mma)
                row[f"{tag}_span_us"] = [s[k]["span_us"]["median"] for k in ("wave", "interleaved")]
                row[f"{tag}_stall_us"] = [s[k]["stall_l2_us"]["median"] for k in ("wave", "interleaved")]
                row[f"{tag}_stall_mean_us"] = [s[k]["stall_l2_us"]["mean"] for k in ("wave", "interleaved")]
                row[f"{tag}_speedup"] = s["speedup"]
        rows.append(row)
    return rows
