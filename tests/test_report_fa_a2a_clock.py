"""The fa-a2a report with the power cap's clock law: the DES's kernels clock up where they wait."""

import json

import pytest

from fa_a2a_records import generate, law_records, toy_host, write
from xsim.cli import main
from xsim.platform import save_profile

SEQ_LENS = [1024, 4096, 16384]
CLOCKS = {"fa-only": 1500.0, "fused": 1600.0, "cc": 1650.0}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fa-clock")
    profile, fa, power = folder / "toy-host.json", folder / "toy-host-fa-a2a.jsonl", folder / "toy-host-power.jsonl"
    save_profile(toy_host(), profile)
    write(generate(toy_host(), SEQ_LENS, seed=2, clock_mhz=CLOCKS), fa)
    write(law_records(beta=0.4, ceiling=1700.0), power)
    return profile, fa, power


def _report(capsys, profile, *records, extra=()):
    code = main(["report", "--experiment", "fa-a2a", "--records", *map(str, records), "--platform", str(profile),
                 "--json", *extra])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_the_law_speeds_up_the_waiting_kernels_and_keeps_the_fixed_clock_beside(files, capsys):
    profile, fa, power = files
    doc = _report(capsys, profile, fa, power)
    rep = doc["experiments"]["fa-a2a"]
    assert rep["clock_law"]["beta"] == pytest.approx(0.4) and rep["clock_law"]["source"] == "toy-host-power.jsonl"
    fixed = _report(capsys, profile, fa, power, extra=("--clock-law", "none"))["experiments"]["fa-a2a"]
    assert fixed["clock_law"] is None and "fixed_clock" not in fixed and fixed["clock_predicted"] is None
    # the law's run keeps the DES at FA-only's clock beside it: the same numbers as without the law
    assert rep["fixed_clock"]["fused_time_mape"] == pytest.approx(fixed["fused_time_mape"])
    assert rep["fixed_clock"]["cc_time_mape"] == pytest.approx(fixed["cc_time_mape"])
    pred = rep["clock_predicted"]
    for name in ("fused", "cc"):
        for m, (mhz, measured) in pred[name]["mhz"].items():
            assert CLOCKS["fa-only"] <= mhz <= 1700.0 and measured == pytest.approx(CLOCKS[name])
    assert "des-fixed-clock" in rep["series"][0]["errors"]


def test_a_waiting_kernel_is_never_predicted_slower_than_at_fa_onlys_clock(files):
    from calibration.power import fit_clock_law
    from calibration.records import load_records
    from xsim.report import fa_a2a

    profile, fa, power = files
    law = fit_clock_law(load_records([power]))
    rep = fa_a2a.build(load_records([fa]), toy_host(), engine="fast", clock_law=law)
    for p in rep.series[0].points:
        law_, fixed = p.predicted["des"], p.predicted["des-fixed-clock"]
        for name in ("fused", "cc"):
            assert law_[f"{name}_us"] <= fixed[f"{name}_us"] + 1e-9
            assert law_[f"{name}_mhz"] >= fixed[f"{name}_mhz"] == CLOCKS["fa-only"]
        assert law_["e_res_us"] == pytest.approx(law_["fused_us"] - p.get("fa-only"))


def test_without_duty_records_every_kernel_runs_at_fa_onlys_clock_and_a_note_says_so(files, capsys):
    profile, fa, _ = files
    doc = _report(capsys, profile, fa)
    assert doc["experiments"]["fa-a2a"]["clock_law"] is None
    assert any("no duty records" in n for n in doc["notes"])
