"""The main job's pages in a real browser (headless Chromium), offline.

The README's main job writes ``out/periodic/index.html`` (``xsim simulate periodic --out``) and
``out/report.html`` (``xsim report -o``). Here the same commands run with fewer bursts and the
closed form only (the page and its figures are the same; the DES lines take a minute more), then
Chromium renders each page with networking off and dumps the DOM after the scripts ran:

- every figure container (``figure.xsim-figure``) holds a drawn plot (plotly's ``main-svg``);
- no ``src``/``href`` refers to an address outside the page's folder;
- the headline table comes before the first figure.

``xsim sweep``'s ``sweep.html`` is checked for drawn plots and addresses too.

Screenshots of both pages are taken by the same test; with ``XSTAGE_SCREENSHOTS=DIR`` the report
runs with the DES, as in the main job, and the shots are copied to DIR (``docs/screenshots/``
holds the committed ones shown in the README's tour).
Without Chromium (``.ci/run`` installs Debian's ``chromium``) the test skips, saying why.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from xsim.cli import main

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--virtual-time-budget=8000")
ADDRESS = re.compile(r"""\b(?:src|href)\s*=\s*(["'])(.*?)\1""", re.I | re.S)
TIMEOUT_S = 120


def _browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium installed (.ci/run installs Debian's chromium with apt-get; "
                "here apt-get was missing or failed)")


def _chromium(browser: str, profile: Path, *args: str) -> str:
    run = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                         timeout=TIMEOUT_S)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    assert main(["simulate", "periodic", "--set", "bursts=30", "--set", "warmup_bursts=10",
                 "--out", str(out / "periodic")]) == 0
    des = [] if os.environ.get("XSTAGE_SCREENSHOTS") else ["--no-des"]  # the committed shots: the main job's page
    with pytest.MonkeyPatch.context() as mp:  # the PNG panels are not what is tested here, and slow
        mp.setattr("xsim.report.html.write_pngs", lambda figures, folder, stem: ([], "PNG skipped in this test"))
        assert main(["report", *des, "-o", str(out / "report.html")]) == 0
    assert main(["sweep", "periodic", "--grid", "gap_us=0,4", "--set", "producers=8", "--set", "bursts=12",
                 "--set", "warmup_bursts=2", "--engine", "simpy", "--jobs", "1", "--out", str(out / "sweep")]) == 0
    return {"simulate": out / "periodic" / "index.html", "report": out / "report.html",
            "sweep": out / "sweep" / "sweep.html"}


def _outside(address: str) -> bool:
    """An address that leaves the page's folder (a scheme, //host, /root or ..); #anchors stay."""
    a = address.strip()
    if not a or a.startswith("#") or a.startswith("data:"):
        return False
    return bool(re.match(r"[a-z][a-z0-9+.-]*:", a, re.I)) or a.startswith("/") or ".." in a.split("/")


def _markup(dom: str) -> str:
    return re.sub(r"(<script\b[^>]*>).*?</script>", r"\1</script>", dom, flags=re.S | re.I)  # code is not markup


def test_sweep_page_renders_offline_in_chromium(pages, tmp_path):
    dom = _chromium(_browser(), tmp_path / "profile", "--dump-dom", pages["sweep"].as_uri())
    assert 'class="main-svg"' in dom
    outside = [a for _, a in ADDRESS.findall(_markup(dom)) if _outside(a)]
    assert not outside, outside[:5]


@pytest.mark.parametrize("name", ["simulate", "report"])
def test_page_renders_offline_in_chromium(pages, name, tmp_path):
    browser = _browser()
    page = pages[name]
    dom = _chromium(browser, tmp_path / "profile", "--dump-dom", page.as_uri())
    figures = dom.split('<figure class="xsim-figure"')[1:]
    expected = page.read_text().count("<figure class='xsim-figure'")
    assert expected >= 3 and len(figures) == expected
    for chunk in figures:
        body = chunk.split("</figure>")[0]
        assert 'class="main-svg"' in body, body[:300]
    outside = [a for _, a in ADDRESS.findall(_markup(dom)) if _outside(a)]
    assert not outside, outside[:5]
    assert dom.index('class="xsim-headline"') < dom.index('class="xsim-figure"')
    if name == "simulate":
        assert "updatemenu" in dom  # the timeline's producer menu was drawn
    shot = tmp_path / f"{name}.png"
    _chromium(browser, tmp_path / "profile", "--window-size=1100,2200", f"--screenshot={shot}", page.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    keep = os.environ.get("XSTAGE_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(keep) / f"{name}.png")
