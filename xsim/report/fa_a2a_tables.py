"""Terminal tables of the fa-a2a report: Table 3 and the predictions per series, the targets."""

from __future__ import annotations

import numpy as np

from xsim.commands.common import print_table


def table3_rows(s) -> list[list]:
    """Table 3 for one series, one row per M: every measured variant, E_res (also against FA-only
    at the fused kernel's clock: "E_res @f"), hiding ratio, speedup, both kernels' SM clocks."""
    return [[p.seq_len, p.get("fa-only"), p.get("sdpa-cudnn"), p.get("a2a-store"), p.get("a2a-ce"), p.get("serial"),
             p.get("fused"), p.get("fused-paced"), p.get("cc"), p.get("cc-atomic"), p.e_res_us,
             p.get("fused") - p.fa_at_clock_of("fused"), p.hiding, p.speedup, p.clock("fa-only"), p.clock("fused")]
            for p in s.points]


def prediction_rows(s) -> list[list]:
    """Measured beside both predictions, one row per M: fused, E_res, the issue floor, cc, paced, and the
    fused kernel's clock, measured beside the DES's clock law (NaN without a law)."""
    rows = []
    for p in s.points:
        cf, des = p.predicted.get("closed-form", {}), p.predicted.get("des", {})
        fixed = p.predicted.get("des-fixed-clock", {})
        rows.append([p.seq_len, p.get("fused"), cf.get("fused_us", np.nan), des.get("fused_us", np.nan),
                     fixed.get("fused_us", np.nan),
                     p.e_res_us, cf.get("e_res_us", np.nan), des.get("e_res_us", np.nan), p.floor_us,
                     p.get("cc"), cf.get("cc_us", np.nan), des.get("cc_us", np.nan),
                     p.get("fused-paced"), cf.get("paced_us", np.nan), des.get("paced_us", np.nan),
                     p.clock("fused"), des.get("fused_mhz", np.nan) if fixed else np.nan])
    return rows


TABLE3_HEADER = ["M", "FA-only", "cuDNN", "A2A store", "A2A CE", "serial", "fused", "fused-paced", "cc (fence)",
                 "cc (atomic)", "E_res", "E_res @f", "hiding H", "speedup", "MHz FA", "MHz fused"]
PREDICTION_HEADER = ["M", "fused", "fused CF", "fused DES", "fused DES @f_FA", "E_res", "E_res CF", "E_res DES",
                     "issue floor", "cc", "cc CF", "cc DES", "paced", "paced CF", "paced DES", "MHz fused",
                     "MHz fused DES"]


def _wide_table(title: str, rows: list[list], header: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    from xsim.commands.common import fmt

    table = Table(title=title)
    for name in header:
        table.add_column(name, no_wrap=True)
    for row in rows:
        table.add_row(*(fmt(v) for v in row))
    console = Console()
    Console(width=max(console.width, 150)).print(table)


def print_report(rep) -> None:
    from xsim.report.fa_a2a import HEADLINE_KEYS

    for s in rep.series:
        where = "on {}: d={head_dim} b_m={block_m} b_n={block_n} N={sp} {destination} {mainloop}".format(
            rep.platform.name, **s.key) + (f" stagger {s.key['stagger_us']:g} us" if s.key.get("stagger_us") else "") \
            + (f" {s.key['timing']} timing" if s.key.get("timing", "burst") != "burst" else "")
        _wide_table(f"Table 3 {where} (us, medians)", table3_rows(s), TABLE3_HEADER)
        _wide_table(f"measured vs predicted {where} (us)", prediction_rows(s), PREDICTION_HEADER)
    s = rep.summary
    print_table("fa-a2a headline", [(k, s.get(k)) for k in HEADLINE_KEYS + ("headline_model",)])
    if "targets" in s:
        _wide_table("targets", [[t["target"], t["value"], t["bound"],
                                 {True: "PASS", False: "FAIL", None: "n/a"}[t["pass"]]] for t in s["targets"]],
                    ["target", "value", "bound", "result"])
