"""Terminal tables of the fa-a2a report: Table 3 and the predictions per series, the targets."""

from __future__ import annotations

from xsim.commands.common import print_table


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
    from xsim.report.fa_a2a import HEADLINE_KEYS, PREDICTION_HEADER, TABLE3_HEADER, prediction_rows, table3_rows

    for s in rep.series:
        where = "on {}: d={head_dim} b_m={block_m} b_n={block_n} N={sp} {destination}".format(
            rep.platform.name, **s.key)
        _wide_table(f"Table 3 {where} (us, medians)", table3_rows(s), TABLE3_HEADER)
        _wide_table(f"measured vs predicted {where} (us)", prediction_rows(s), PREDICTION_HEADER)
    s = rep.summary
    print_table("fa-a2a headline", [(k, s.get(k)) for k in HEADLINE_KEYS + ("headline_model",)])
    if "targets" in s:
        _wide_table("targets", [[t["target"], t["value"], t["bound"],
                                 {True: "PASS", False: "FAIL", None: "n/a"}[t["pass"]]] for t in s["targets"]],
                    ["target", "value", "bound", "result"])
