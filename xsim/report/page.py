"""The page a person reads: a title, then per experiment a headline table, the figures with
their captions, and folded details. Every page opens offline.

One model for every report (micro, MoE, FA+A2A) and for ``xsim simulate --out``::

    from xsim.report.page import Details, Figure, Headline, Page, Section, table_html, json_html

    section = Section(
        title="micro: remote-store microbenchmarks",
        meta="platform h200-nvlink-x2 · link NV18 · records 2026-11-29 19:40–19:41 UTC",
        headline=[Headline("R, drain rate", "360 GB/s", "95% CI 354–366 GB/s")],   # human units
        figures=[Figure("a_issue_vs_gap", fig, "Read the knee at G*: eq. 3, T_iss = max(T_iss0, V/R − G).")],
        details=[Details("every point", table_html(header, rows)), Details("profile", json_html(profile))],
        notes=["no moe records yet"])
    Page("X-Stage report", [section]).write("out/report.html")            # plotly.js inline, once
    Page("periodic", [section]).write("out/periodic/index.html", plotlyjs="directory")
    #   -> plotly.min.js written once beside the page and referenced relatively

Order on the page, per section: title and meta line, notes, the headline table
(``table.xsim-headline``), the figures (each a ``figure.xsim-figure`` holding the plot and a
``figcaption``), then the details (``<details>``, folded). No page refers to any address
outside its folder: plotly's logo link is switched off and nothing is loaded from a CDN.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from xsim.units import BLANK

PLOTLYJS_FILE = "plotly.min.js"
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}  # the logo is a link to plotly.com
STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1000px;padding:0 1em;color:#222}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ddd}.meta{color:#555;margin-top:0}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}
table.xsim-headline td:nth-child(2){font-weight:600;white-space:nowrap}table.xsim-points td{font-size:11px}
figure.xsim-figure{margin:1.5em 0}figcaption{color:#444;font-size:14px;margin-top:.3em}
details{margin:.6em 0}summary{cursor:pointer;font-weight:600}pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:12px}
.note{background:#fff8e0;padding:.4em .8em;border-left:3px solid #e0b000}"""


@dataclass(frozen=True)
class Headline:
    """One headline row: what it is, its value in human units, and how to read it (may be '')."""

    quantity: str
    value: str
    note: str = ""


@dataclass(frozen=True)
class Figure:
    """A plotly figure, the stem of its file names, and one sentence: what to read, which equation."""

    name: str
    figure: Any            # plotly.graph_objects.Figure
    caption: str

    def __post_init__(self):
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f'"name" must be letters, digits, "_" or "-", got {self.name!r}.')
        if not self.caption.strip():
            raise ValueError(f'"caption" of figure {self.name!r} must say what to read from it.')


@dataclass(frozen=True)
class Details:
    """A folded section: the summary line and its HTML body (a table, a JSON block)."""

    summary: str
    body_html: str


@dataclass(frozen=True)
class Section:
    """One experiment (or one run) on the page."""

    title: str
    meta: str = ""                                  # platform, link, dates: one line
    headline: Sequence[Headline] = ()
    figures: Sequence[Figure] = ()
    details: Sequence[Details] = ()
    notes: Sequence[str] = ()

    def __post_init__(self):
        for name, kind in (("headline", Headline), ("figures", Figure), ("details", Details), ("notes", str)):
            bad = [x for x in getattr(self, name) if not isinstance(x, kind)]
            if bad:
                raise ValueError(f'"{name}" of section {self.title!r} must hold {kind.__name__} items, got {bad[0]!r}.')


@dataclass(frozen=True)
class Page:
    title: str
    sections: Sequence[Section] = field(default_factory=tuple)

    def __post_init__(self):
        names = [f.name for s in self.sections for f in s.figures]
        if len(names) != len(set(names)):
            raise ValueError(f'figure names must be unique on a page, got {sorted(names)}.')

    @property
    def figures(self) -> dict[str, Any]:
        """name -> plotly figure, in page order (for PNG export)."""
        return {f.name: f.figure for s in self.sections for f in s.figures}

    def render(self, plotlyjs: str = "inline") -> str:
        """The HTML text. ``plotlyjs``: ``inline`` (embedded once, in the head) or ``directory``
        (``<script src="plotly.min.js">``: the file must lie beside the page, :meth:`write` puts it there)."""
        if plotlyjs not in ("inline", "directory"):
            raise ValueError(f'"plotlyjs" must be "inline" or "directory", got {plotlyjs!r}.')
        parts = ["<!doctype html><html><head><meta charset='utf-8'>",
                 f"<title>{html.escape(self.title)}</title><style>{STYLE}</style>", _plotly_script(plotlyjs),
                 f"</head><body><h1>{html.escape(self.title)}</h1>"]
        if len(self.sections) > 1:
            parts.append("<ul>" + "".join(f"<li><a href='#sec-{i}'>{html.escape(s.title)}</a></li>"
                                          for i, s in enumerate(self.sections)) + "</ul>")
        for i, section in enumerate(self.sections):
            parts.append(_section_html(section, i))
        parts.append("</body></html>")
        return "\n".join(parts)

    def write(self, path: str | Path, plotlyjs: str = "inline") -> Path:
        """Write the page (atomically); with ``directory`` also ``plotly.min.js`` beside it."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if plotlyjs == "directory":
            js = path.parent / PLOTLYJS_FILE
            text = _plotlyjs_text()
            if not js.is_file() or js.stat().st_size != len(text.encode()):
                _write_atomic(js, text)
        _write_atomic(path, self.render(plotlyjs))
        return path


def _plotlyjs_text() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _plotly_script(plotlyjs: str) -> str:
    if plotlyjs == "directory":
        return f"<script src='{PLOTLYJS_FILE}'></script>"
    return f"<script type='text/javascript'>{_plotlyjs_text()}</script>"


def _write_atomic(path: Path, text: str) -> None:
    """A temporary file in the same folder, then a rename: a reader never sees half a page."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as an ordinary new file, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _section_html(s: Section, index: int) -> str:
    import plotly.io as pio

    parts = [f"<section id='sec-{index}'>", f"<h2>{html.escape(s.title)}</h2>"]
    if s.meta:
        parts.append(f"<p class='meta'>{html.escape(s.meta)}</p>")
    parts += [f"<p class='note'>{html.escape(n)}</p>" for n in s.notes]
    if s.headline:
        parts.append(headline_html(s.headline))
    for f in s.figures:
        div = pio.to_html(f.figure, full_html=False, include_plotlyjs=False, div_id=f"plot-{f.name}",
                          config=PLOTLY_CONFIG)
        parts.append(f"<figure class='xsim-figure' id='fig-{f.name}'>{div}"
                     f"<figcaption>{html.escape(f.caption)}</figcaption></figure>")
    for d in s.details:
        parts.append(f"<details><summary>{html.escape(d.summary)}</summary>{d.body_html}</details>")
    parts.append("</section>")
    return "\n".join(parts)


def headline_html(rows: Sequence[Headline]) -> str:
    body = "".join(f"<tr><td>{html.escape(r.quantity)}</td><td>{html.escape(r.value)}</td>"
                   f"<td>{html.escape(r.note)}</td></tr>" for r in rows)
    return f"<table class='xsim-headline'><tr><th>quantity</th><th>value</th><th>how to read it</th></tr>{body}</table>"


def table_html(header: Sequence[str], rows: Sequence[Sequence[Any]], css_class: str = "xsim-points") -> str:
    """A plain table; each cell is shown as given (format numbers with :func:`xsim.units.human`
    first); None and NaN cells are left blank."""
    def cell(v) -> str:
        if v is None or (isinstance(v, float) and v != v) or v == BLANK:
            return ""
        return html.escape(v if isinstance(v, str) else f"{v:.4g}" if isinstance(v, float) else str(v))

    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table class='{css_class}'><tr>{head}</tr>{body}</table>"


def _plain(value: Any) -> Any:
    if isinstance(value, float) and value != value or isinstance(value, float) and abs(value) == float("inf"):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def json_html(document: Any) -> str:
    """A JSON document as a preformatted block (for the folded raw sections; NaN shown as null)."""
    return f"<pre>{html.escape(json.dumps(_plain(document), indent=2, default=str))}</pre>"
