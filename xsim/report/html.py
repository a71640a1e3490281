"""PNG export of report figures, and the older flat page (:func:`page`).

Reports are laid out with :mod:`xsim.report.page` (headline, captioned figures, folded
details); :func:`page` stays for callers not yet moved onto it (self-contained, plotly.js once).

PNG export needs a renderer: plotly's own ``write_image`` (kaleido >= 1 with Chrome), else
kaleido 0.2's bundled Chromium through its scope API with plotly's own plotly.js; without
either the PNGs are skipped and the reason is returned, never an error.
"""

from __future__ import annotations

import functools
import html
import json
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio


def page(title: str, sections: list[tuple[str, str]], figures: dict[str, go.Figure]) -> str:
    """The HTML text: text sections, then every figure (the first carries plotly.js)."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             "<style>body{font-family:sans-serif;margin:2em;max-width:1000px}pre{background:#f6f6f6;"
             "padding:1em;overflow:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
             "padding:2px 6px;font-size:12px}</style></head><body>", f"<h1>{html.escape(title)}</h1>"]
    for heading, body in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>{body}")
    for i, (name, fig) in enumerate(figures.items()):
        parts.append(f"<h2>{html.escape(name)}</h2>")
        parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False}))
    parts.append("</body></html>")
    return "\n".join(parts)


def json_block(document) -> str:
    return f"<pre>{html.escape(json.dumps(document, indent=2, default=str))}</pre>"


def table(header: list[str], rows: list[list]) -> str:
    cell = lambda v: f"{v:.4g}" if isinstance(v, float) else html.escape(str(v))  # noqa: E731
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


@functools.lru_cache(maxsize=1)
def _kaleido_scope(scope_class, plotly_js: Path):
    """One kaleido 0.2 scope per process: each new scope starts its own Chromium (about 1.5 s a PNG)."""
    return scope_class(plotlyjs=str(plotly_js))


def _png_bytes(fig: go.Figure) -> bytes:
    try:
        return fig.to_image(format="png", width=900, height=560)
    except Exception as first:  # noqa: BLE001  fall back to kaleido 0.2's bundled Chromium
        try:
            import plotly
            from kaleido.scopes.plotly import PlotlyScope
        except ImportError:
            raise RuntimeError(f"no PNG renderer ({first.__class__.__name__}: {str(first).splitlines()[0]})") from None
        scope = _kaleido_scope(PlotlyScope, Path(plotly.__file__).parent / "package_data" / "plotly.min.js")
        return scope.transform(json.loads(fig.to_json()), format="png", width=900, height=560)


def write_pngs(figures: dict[str, go.Figure], folder: Path, stem: str) -> tuple[list[str], str | None]:
    """PNG per figure next to the HTML; returns (written paths, reason skipped or None)."""
    written = []
    for name, fig in figures.items():
        try:
            data = _png_bytes(fig)
        except Exception as exc:  # noqa: BLE001
            return written, f"PNG skipped: {str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__}"
        path = folder / f"{stem}-{name}.png"
        from xsim.fileio import atomic_write

        atomic_write(path, data, "PNG")
        written.append(str(path))
    return written, None
