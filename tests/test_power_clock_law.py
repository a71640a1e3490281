"""The power cap's clock law: its fit on duty records (calibration.power) and its use (xsim.attention.clock)."""

import math

import pytest

from calibration.power import PowerFitError, clock_law_for, fit_clock_law
from fa_a2a_records import PLATFORM, duty_record, flat_stats, law_records, recordset
from hwkernels.records import make_record
from xsim.attention.clock import ClockLaw, solve

TOP = 1980.0


def variant():
    """A reference variant's record (kind "variant"): never fitted."""
    stats = {"busy_fraction": flat_stats(0.5), "run_clock_mhz": flat_stats(1750.0), "smi_clock_mhz": flat_stats(TOP)}
    return make_record("power", "variant", {"seq_len": 2048, "variant": "fused"}, stats, {"ok": True},
                       PLATFORM, "abc", False)


def test_fit_recovers_a_known_law():
    law = fit_clock_law(recordset(law_records(beta=0.4, ceiling=1700.0)))
    assert law.beta == pytest.approx(0.4, rel=1e-9)
    assert law.ceilings == ((2048, 1700.0), (8192, 1700.0))


@pytest.mark.parametrize("drop, match", [
    (lambda r: r["params"]["gap_kind"] == "none", "anchor"),
    (lambda r: r["stats"]["smi_clock_mhz"]["median"] < TOP, "anchor"),
    (lambda r: r["params"]["gap_kind"] == "store" and r["stats"]["smi_clock_mhz"]["median"] >= TOP, "ceiling"),
    (lambda r: True, "no duty records"),
])
def test_fit_says_what_is_missing(drop, match):
    recs = [r for r in law_records() if not drop(r)] + [variant()]
    with pytest.raises(PowerFitError, match=match):
        fit_clock_law(recordset(recs))


def test_law_clamps_and_interpolates():
    law = ClockLaw(0.5, ((2048, 1700.0), (8192, 1600.0)))
    assert law.ceiling_mhz(1024) == 1700.0 and law.ceiling_mhz(65536) == 1600.0
    assert law.ceiling_mhz(4096) == pytest.approx(1650.0)
    assert law.clock_mhz(1500.0, 1.0, 2048) == 1500.0
    assert law.clock_mhz(1500.0, 1.21, 2048) == pytest.approx(1650.0)    # 1500 * 1.1
    assert law.clock_mhz(1500.0, 4.0, 2048) == 1700.0                       # the ceiling
    assert law.clock_mhz(1800.0, 4.0, 2048) == 1800.0                       # never below the reference
    assert law.clock_mhz(1500.0, 0.5, 2048) == 1500.0                       # a busier kernel: no gain
    for bad in (dict(beta=-0.1, ceilings=((1, 1.0),)), dict(beta=math.nan, ceilings=((1, 1.0),)),
                dict(beta=0.3, ceilings=()), dict(beta=0.3, ceilings=((1024, 0.0),))):
        with pytest.raises(ValueError):
            ClockLaw(**bad)


def test_solve_is_a_fixed_point_of_time_and_clock():
    law = ClockLaw(0.5, ((1024, 3000.0),))
    # no residual: the kernel is FA-only, its clock FA-only's
    assert solve(law, 100.0, 1500.0, 4096, lambda s: 0.0) == pytest.approx((100.0, 1500.0))
    # a link-bound residual that does not shrink with the compute: T = 100 s + 60
    t, f = solve(law, 100.0, 1500.0, 4096, lambda s: 60.0, tol=1e-10, max_iter=200)
    s = 1500.0 / f
    assert t == pytest.approx(100.0 * s + 60.0)
    assert f == pytest.approx(1500.0 * (t / (100.0 * s)) ** 0.5, rel=1e-6)
    assert 1500.0 < f < 3000.0
    capped = ClockLaw(0.5, ((1024, 1600.0),))
    assert solve(capped, 100.0, 1500.0, 4096, lambda s: 60.0)[1] == pytest.approx(1600.0)


def test_clock_law_for_prefers_the_records_given_and_notes_their_absence(monkeypatch):
    law, notes = clock_law_for(recordset(law_records()), "h200-pcie-host")
    assert law is not None and notes == [] and law.source == "h200-pcie-host-power.jsonl"
    monkeypatch.setattr("calibration.records.load_shipped_records", lambda *a, **k: None)
    empty = recordset([duty_record(2048, "none", 0, 0.9, 1500.0, 1650.0)])
    law, notes = clock_law_for(recordset([variant()]), "nowhere")
    assert law is None and notes[0].startswith("fa-a2a: no clock law (no duty records")
    other = make_record("fa-a2a", "fa-only", {"seq_len": 2048}, {"kernel_us": flat_stats(60.0)}, {"ok": True},
                        PLATFORM, "abc", False)
    law, notes = clock_law_for(recordset([other]), "nowhere")
    assert law is None and notes[0].startswith("fa-a2a: no duty records (experiment power) for nowhere")
    law, notes = clock_law_for(empty, "nowhere")
    assert law is None and "no clock law" in notes[0]
