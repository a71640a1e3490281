"""The fa_a2a builder at the power cap's clock (``clock_law = records``, xsim.attention.clocked): the
law's anchors, the what-if's fixed point, the sweep and the one-line errors."""

import json

import pytest

from fa_a2a_records import law_records, recordset
from calibration.power import fit_clock_law
from xsim.attention import clocked
from xsim.attention.clock import ClockLaw, solve
from xsim.cli import main
from xsim.params import resolve
from xsim.builders import fa_a2a
from xsim.platform import resolve_platform

HOST = resolve_platform("h200-pcie-host")
SMALL = dict(seq_len=2048, batch=1, heads=8, sp=4, sigma_us_per_kv_tile=1.72, qloop_fixed_us=0.24,
             qloop_cv=0.0, destination="host", stagger_us=0.0)


def params(**kw):
    return resolve(fa_a2a.PARAMS, {**SMALL, **kw}, "test")


def test_the_fit_keeps_each_lengths_fa_only_clock_as_its_anchor():
    law = fit_clock_law(recordset(law_records(f0=1500.0, ms=(2048, 8192))))
    assert law.anchors == ((2048, 1500.0), (8192, 1500.0)) and law.anchor_mhz(4096) == 1500.0
    two = ClockLaw(0.3, ((2048, 1700.0),), anchors=((2048, 1600.0), (8192, 1500.0)))
    assert two.anchor_mhz(4096) == pytest.approx(1550.0) and two.anchor_mhz(65536) == 1500.0
    assert two.to_dict()["anchors_mhz"] == {"2048": 1600.0, "8192": 1500.0}
    with pytest.raises(ValueError, match="no FA-only anchors"):
        ClockLaw(0.3, ((2048, 1700.0),)).anchor_mhz(2048)
    with pytest.raises(ValueError, match="anchors need"):
        ClockLaw(0.3, ((2048, 1700.0),), anchors=((2048, 0.0),))


def test_solve_returns_the_time_and_clock_of_one_scale():
    law = ClockLaw(0.5, ((1024, 3000.0),))
    seen = []
    t, f = solve(law, 100.0, 1500.0, 4096, lambda s: seen.append(s) or 60.0, max_iter=2)
    assert t == pytest.approx(100.0 * seen[-1] + 60.0) and f == pytest.approx(1500.0 / seen[-1])
    with pytest.raises(ValueError, match="max_iter"):
        solve(law, 100.0, 1500.0, 4096, lambda s: 0.0, max_iter=0)


def test_fa_only_keeps_its_clock_and_a_waiting_kernel_clocks_up():
    _, fa = fa_a2a.simulate(params(variant="fa-only", clock_law="records"), HOST, trace=False)
    _, fixed = fa_a2a.simulate(params(variant="fa-only"), HOST, trace=False)
    assert fa["kernel_us"]["mean"] == pytest.approx(fixed["kernel_us"]["mean"])
    assert fa["clock"]["predicted_mhz"] == pytest.approx(fa["clock"]["fa_only_mhz"])
    assert fa["clock"]["fa_only_mhz"] == pytest.approx(clocked.law_of(HOST).anchor_mhz(2048))
    _, fused = fa_a2a.simulate(params(variant="fused", clock_law="records"), HOST, trace=False)
    c = fused["clock"]
    assert c["fa_only_mhz"] < c["predicted_mhz"] <= c["ceiling_mhz"] + 1e-9
    assert c["qloop_scale"] == pytest.approx(c["fa_only_mhz"] / c["predicted_mhz"])
    assert fused["kernel_us"]["mean"] < c["kernel_fixed_clock_us"]          # faster compute, the same link
    assert fused["e_res_us"] == pytest.approx(fused["kernel_us"]["mean"] - fused["t_fa_model_us"])
    _, given = fa_a2a.simulate(params(variant="fused", clock_law="records", fa_clock_mhz=1400.0), HOST, trace=False)
    assert given["clock"]["fa_only_mhz"] == 1400.0 and given["clock"]["fa_only_from"] == "fa_clock_mhz"


def _cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_steady_scenario_and_its_sweep(capsys, tmp_path):
    code, out, err = _cli(capsys, "simulate", "fa-a2a-host-gluon-steady", "--set", "seq_len=2048", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["params"]["clock_law"] == "records" and doc["clock"]["source"] == "h200-pcie-host-power.jsonl"
    code, _, err = _cli(capsys, "sweep", "fa-a2a-host-gluon-steady", "--grid", "seq_len=1024,2048",
                        "--grid", "variant=fa-only,fused", "--jobs", "1", "--out", str(tmp_path / "s"), "--json")
    assert code == 0, err
    rows = {(r["seq_len"], r["variant"]): r for r in
            map(json.loads, (tmp_path / "s" / "rows.jsonl").read_text().splitlines())}
    assert rows[2048, "fused"]["kernel_us_mean"] == pytest.approx(doc["kernel_us"]["mean"])
    assert rows[2048, "fused"]["clock_predicted_mhz"] > rows[2048, "fa-only"]["clock_predicted_mhz"]
    assert (tmp_path / "s" / "sweep.html").exists()


def test_a_platform_without_power_records_is_a_one_line_error(capsys):
    code, out, err = _cli(capsys, "simulate", "fa-a2a-paper", "--platform", "paper-8gpu",
                          "--set", "clock_law=records")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "clock_law records on paper-8gpu: no shipped power records" in err
    code, _, err = _cli(capsys, "simulate", "fa-a2a-paper", "--platform", "paper-8gpu", "--set", "clock_law=law")
    assert code == 2 and '"clock_law" must be one of none, records' in err


def test_the_budget_counts_every_run_of_a_point():
    from xsim.attention.clock import MAX_ITER
    from xsim.budget import estimate
    from xsim.builders import moe
    from xsim.scenario import shipped_scenarios

    one = estimate(fa_a2a, params(), HOST, "fast", trace=False)
    law = estimate(fa_a2a, params(clock_law="records"), HOST, "fast", trace=False)
    assert law.events == (1 + MAX_ITER) * one.events and law.memory_bytes == one.memory_bytes
    p = dict(shipped_scenarios()["moe1-hy3-bf16-hot-1024"].params)
    both = estimate(moe, {**p, "schedule": "both", "spread_seeds": 3}, HOST, "fast", trace=False)
    wave = estimate(moe, {**p, "schedule": "wave", "spread_seeds": 1}, HOST, "fast", trace=False)
    assert both.events == 6 * wave.events and both.memory_bytes == wave.memory_bytes
