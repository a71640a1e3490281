"""One simulation on one page (``xsim simulate --out DIR`` -> ``DIR/index.html``).

The summary table (the same rows the terminal shows, in human units), then the timeline
(a menu picks the producers shown), q(t) and the Tensor-core busy share, then the files
beside the page and the raw summary, folded.
"""

from __future__ import annotations

from xsim.report.page import Details, Figure, Headline, Section, json_html
from xsim.units import human_key

STATS = ("mean", "median", "p10", "p90")
CAPTIONS = {
    "timeline": "Read where producers wait: an issue span (orange) longer than T_iss0 is backpressure, "
                "eq. 3's V/R − G when the gap G is below G*; the menu picks which producers are shown.",
    "qtrace": "Read whether the outstanding bytes q(t) reach the capacity Q (dotted): at Q the issuers are "
              "held back and the period settles on the drain bound V/R of eq. 2.",
    "busy": "Read the share of producers in their mainloop over time: a dip below 100 % is Tensor-core time "
            "lost to the X-Stage (eq. 4's ΔT_iss per burst).",
}
FILES = (("tiles.csv", "every tile: producer, kind, burst index, bytes and every event time (µs)"),
         ("qtrace.csv", "q(t) per GPU: t_us, q_bytes"),
         ("summary.json", "the summary, as --json prints it"))


def summary_rows(summary: dict) -> list[list[str]]:
    """[quantity, mean, median, p10, p90, n] per statistic of the summary, in human units."""
    rows = []
    for key, value in summary.items():
        if isinstance(value, dict):
            rows.append([key] + [human_key(key, value.get(k)) for k in STATS] + [str(value.get("n", ""))])
        else:
            rows.append([key, human_key(key, value), "", "", "", ""])
    return rows


def _headline(summary: dict, closed_form: dict) -> list[Headline]:
    rows = []
    for key, mean, median, p10, p90, n in summary_rows(summary):
        if median:
            rows.append(Headline(key, f"mean {mean} · median {median} · p10 {p10} · p90 {p90}", f"n = {n}"))
        else:
            rows.append(Headline(key, mean))
    for key, value in closed_form.items():
        rows.append(Headline(f"closed form {key}", human_key(key, value), "the fluid model, eqs. 2–5"))
    return rows


def _files_html() -> str:
    items = "".join(f"<li><a href='{name}'>{name}</a>: {what}</li>" for name, what in FILES)
    return f"<ul>{items}</ul>"


def section(document: dict, figures: dict) -> Section:
    """The page's one section: ``document`` is what ``--json`` prints, ``figures`` name -> plotly figure."""
    params = ", ".join(f"{k} = {human_key(k, v)}" for k, v in document.get("params", {}).items())
    summary = {k: v for k, v in document.items()
               if k not in ("scenario", "platform", "engine", "params", "closed_form")}
    return Section(
        title=f"{document['scenario']} on {document['platform']} ({document['engine']} engine)",
        meta=params,
        headline=_headline(summary, document.get("closed_form", {})),
        figures=[Figure(name, fig, CAPTIONS[name]) for name, fig in figures.items()],
        details=[Details("files beside this page", _files_html()), Details("the raw summary", json_html(document))])
