"""The micro section's headline: R and Q with their intervals, T_iss0, the copy-engine ratio, errors by mode."""

import pytest

from calibration.records import load_shipped_records
from xsim.platform import resolve_platform
from xsim.report import micro
from xsim.report.micro_page import dates_text, headline


def test_dates_text():
    assert dates_text("2026-11-29T19:40:46Z", "2026-11-29T19:41:58Z") == "2026-11-29 19:40–19:41 UTC"
    assert dates_text("2026-11-29T23:59:00Z", "2026-11-30T00:01:00Z") == "2026-11-29 23:59 – 2026-11-30 00:01 UTC"


def test_headline_on_the_shipped_records_closed_form():
    rs = load_shipped_records(platform="h200-nvlink-x2")
    if rs is None:
        pytest.skip("no shipped records")
    rows = {h.quantity: h.value for h in headline(micro.build(rs, resolve_platform("h200-nvlink-x2"), des=False))}
    assert rows["R, drain rate"].startswith("367 GB/s (95% CI 366–369 GB/s")   # R(132) of the R(K) law
    assert rows["Q(K=132), capacity"].startswith("2.37 MiB (knee 2.38 MiB, 95% CI")
    assert rows["T_iss0(K=132, B=32 KiB)"] == "0.539 µs" and rows["copy-engine ratio"] == "0.928"
    aligned = rows["held-out aligned, mode-aware closed form (n=80)"]
    assert aligned.startswith("period 9.43% · mean issue 7.22%") and "p90" not in aligned  # no tails without the DES
