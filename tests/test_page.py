"""The page model: order on the page, plotly.js once (inline or beside), no outside address."""

import re

import plotly.graph_objects as go
import pytest

from xsim.report.page import (
    PLOTLYJS_FILE, Details, Figure, Headline, Page, Section, json_html, table_html,
)

EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)""", re.I)


def _page() -> Page:
    figs = [Figure(f"f{i}", go.Figure(go.Scatter(x=[0, 1], y=[i, i + 1])), f"Read line {i}; it tests eq. {i}.")
            for i in range(2)]
    sections = [Section("micro", "platform p · link NV18 · 2026-11-29", [Headline("R", "360 GB/s", "eq. 1")], figs,
                        [Details("every point", table_html(["a", "b"], [[1.5, float("nan")], ["x", None]]))]),
                Section("moe", notes=["no moe records exist yet"])]
    return Page("X-Stage report", sections)


def test_inline_page_orders_headline_figures_details_and_embeds_plotly_once():
    from plotly.offline import get_plotlyjs

    text = _page().render()
    assert text.count(get_plotlyjs()[:2000]) == 1
    outside_scripts = re.sub(r"<script.*?</script>", "", text, flags=re.S)
    assert text.count("class='xsim-figure'") == 2 and text.count("<figcaption>") == 2
    head, first_fig, details = (text.index(s) for s in ("xsim-headline", "xsim-figure", "<details>"))
    assert head < first_fig < details
    assert '"displaylogo": false' in text and not EXTERNAL.search(outside_scripts)
    assert "<td></td>" in text and "nan" not in outside_scripts.lower()  # NaN and None cells are blank


def test_directory_page_writes_plotly_beside_it_once(tmp_path):
    page = _page()
    path = page.write(tmp_path / "index.html", plotlyjs="directory")
    text = path.read_text()
    assert f"<script src='{PLOTLYJS_FILE}'></script>" in text and len(text) < 200_000
    js = tmp_path / PLOTLYJS_FILE
    first = js.stat().st_mtime_ns
    page.write(tmp_path / "other.html", plotlyjs="directory")
    assert js.stat().st_mtime_ns == first  # the same plotly.js is not written again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html", "other.html", PLOTLYJS_FILE]


def test_page_checks_its_parts():
    with pytest.raises(ValueError, match='"caption" of figure \'x\' must say what to read'):
        Figure("x", go.Figure(), " ")
    with pytest.raises(ValueError, match='"name" must be letters'):
        Figure("a b", go.Figure(), "Read it.")
    fig = Figure("x", go.Figure(), "Read it.")
    with pytest.raises(ValueError, match="figure names must be unique"):
        Page("p", [Section("a", figures=[fig]), Section("b", figures=[fig])])
    with pytest.raises(ValueError, match='"headline" of section \'a\' must hold Headline items'):
        Section("a", headline=[("R", "360 GB/s")])
    with pytest.raises(ValueError, match='"plotlyjs" must be'):
        Page("p").render("cdn")


def test_json_html_shows_nan_as_null():
    assert "null" in json_html({"x": float("nan")}) and "NaN" not in json_html({"x": float("nan")})
