"""The shipped fa-a2a scenarios: every number has a source, and the host scenario's Q-loop is the
fit of the shipped FA-only records (once they ship), not a number typed in."""

import pytest

from calibration.records import parse_texts, shipped_record_files
from xsim.builders import fa_a2a
from xsim.report.fa_a2a import build
from xsim.platform import resolve_platform
from xsim.scenario import shipped_scenarios

NAMES = ("fa-a2a-host", "fa-a2a-paper")


@pytest.mark.parametrize("name", NAMES)
def test_every_parameter_has_a_source(name):
    s = shipped_scenarios()[name]
    assert s.builder == "fa_a2a" and set(s.sources) == set(fa_a2a.PARAMS)


def test_host_scenario_qloop_is_the_fit_of_the_shipped_records():
    files = [e for e in shipped_record_files() if e.name.endswith("-fa-a2a.jsonl")]
    if not files:
        pytest.skip("no fa-a2a records shipped yet")
    rs = parse_texts([(e.name, e.read_bytes()) for e in files])
    rep = build(rs, resolve_platform("h200-pcie-host"), engine=None)
    key = rep.summary["headline_series"]
    series = next(s for s in rep.series if s.key == key)
    p = shipped_scenarios()["fa-a2a-host"].params
    assert (p["head_dim"], p["block_m"], p["block_n"], p["sp"], p["destination"]) == tuple(key.values())
    assert p["sigma_us_per_kv_tile"] == pytest.approx(series.qloop.sigma_us_per_kv_tile, rel=1e-3)
    assert p["qloop_fixed_us"] == pytest.approx(series.qloop.fixed_us, rel=1e-3, abs=1e-3)
