"""The shipped fa-a2a scenarios: every number has a source, and the host scenario's Q-loop is the
fit of the shipped FA-only records (once they ship), not a number typed in."""

import math

import pytest

from calibration.records import parse_texts, shipped_record_files
from xsim.attention.qloop import fit_qloop
from xsim.builders import fa_a2a
from xsim.report.fa_a2a_points import collect
from xsim.scenario import shipped_scenarios

NAMES = ("fa-a2a-host", "fa-a2a-host-gluon", "fa-a2a-host-gluon-steady", "fa-a2a-paper")


@pytest.mark.parametrize("name", NAMES)
def test_every_parameter_has_a_source(name):
    s = shipped_scenarios()[name]
    assert s.builder == "fa_a2a" and set(s.sources) == set(fa_a2a.PARAMS)


@pytest.mark.parametrize("name,mainloop,timing", [("fa-a2a-host", "triton", "burst"), ("fa-a2a-host-gluon", "gluon", "burst"),
                                                  ("fa-a2a-host-gluon-steady", "gluon", "steady")])
def test_host_scenario_qloop_is_the_fit_of_the_shipped_records(name, mainloop, timing):
    files = [e for e in shipped_record_files("h200-pcie-host") if e.name.endswith("-fa-a2a.jsonl")]  # the scenarios' platform
    if not files:
        pytest.skip("no fa-a2a records shipped yet")
    rs = parse_texts([(e.name, e.read_bytes()) for e in files])
    p = shipped_scenarios()[name].params
    key = (p["head_dim"], p["block_m"], p["block_n"], p["sp"], p["destination"], mainloop, p["stagger_us"],
           timing)   # short launches (burst) at one clock; the steady state with the power cap's law
    assert (p["clock_law"] == "records") == (timing == "steady")
    points = [q for q in collect(rs, [])[key].values() if math.isfinite(q.qloop_us)]
    fit = fit_qloop([q.seq_len for q in points], [q.qloop_us for q in points], p["block_n"],
                    [q.qloop_cv for q in points])
    assert p["sigma_us_per_kv_tile"] == pytest.approx(fit.sigma_us_per_kv_tile, rel=1e-3)
    assert p["qloop_cv"] == pytest.approx(fit.cv, abs=1e-4) and fit.cv > 0
    assert p["qloop_fixed_us"] == pytest.approx(fit.fixed_us, rel=1e-3, abs=1e-3)


def test_gluon_host_scenario_staggers_by_the_design_test():
    """The headline kernel's stagger is eq. 10's S* on the scenario's platform, not a typed-in number."""
    from xsim.attention.stagger import design_stagger
    from xsim.platform import resolve_platform

    s = shipped_scenarios()["fa-a2a-host-gluon"]
    p = s.params
    design = design_stagger(resolve_platform(s.platform), p["producers"], p["block_m"] * p["head_dim"] * 2)
    assert p["stagger_us"] == pytest.approx(design.stagger_us, abs=0.05) and design.stagger_us > 0
