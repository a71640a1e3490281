"""The MoE kernel's own clock law: its fit on moe duty records and the schedules solved at the cap."""

import json
import math

import pytest

from calibration.power import PowerFitError, fit_moe_clock_law
from calibration.records import parse_texts
from fa_a2a_records import PLATFORM, flat_stats
from hwkernels.records import make_record
from xsim.builders import moe as builder
from xsim.moe.clocked import MoEClockLaw, simulate, solve_schedule
from xsim.platform import resolve_platform

TOP = 1980.0
ANCHORS = {("a", "wave"): 1500.0, ("a", "interleaved"): 1400.0, ("b", "wave"): 1450.0, ("b", "interleaved"): 1450.0}
CEILINGS = {"a": 1800.0, "b": 1750.0}


def duty(config, schedule, gap, u, f, smi) -> dict:
    stats = {"busy_fraction": flat_stats(u), "run_clock_mhz": flat_stats(f), "smi_clock_mhz": flat_stats(smi)}
    params = {"config": config, "schedule": schedule, "gap_kind": "none" if gap == 0 else "idle", "gap_ratio": gap}
    return make_record("moe", "duty", params, stats, {"ok": True}, PLATFORM, "test", False)


def law_records(beta=0.7, u0=0.97) -> list[dict]:
    """Duty records of a known law: capped below each config's ceiling, at it (nvidia-smi at the top) above."""
    recs = []
    for (config, schedule), f0 in ANCHORS.items():
        recs.append(duty(config, schedule, 0, u0, f0, 1600.0))
        for gap in (0.1, 0.2, 0.3, 0.5, 1.5):
            u = u0 / (1 + gap)
            f = f0 * (u0 / u) ** beta
            capped = f < CEILINGS[config]
            recs.append(duty(config, schedule, gap, u, f if capped else CEILINGS[config], 1800.0 if capped else TOP))
    return recs


def recordset(recs):
    return parse_texts([("h200-pcie-host-moe.jsonl", "".join(json.dumps(r) + "\n" for r in recs).encode())])


def test_fit_recovers_a_known_law_per_config_and_schedule():
    law = fit_moe_clock_law(recordset(law_records()))
    assert law.beta == pytest.approx(0.7, rel=1e-9)
    assert dict(law.ceilings) == CEILINGS
    assert dict(law.anchors) == ANCHORS
    assert law.anchor_mhz("a", "interleaved") == 1400.0 and law.ceiling_mhz("b") == 1750.0
    one = law.law("a", "interleaved")
    assert one.clock_mhz(1400.0, 1.2, 1) == pytest.approx(1400.0 * 1.2 ** 0.7)


@pytest.mark.parametrize("drop, match", [
    (lambda r: r["params"]["gap_kind"] == "none", "anchor"),
    (lambda r: r["params"]["gap_kind"] == "idle" and r["stats"]["smi_clock_mhz"]["median"] >= TOP, "ceiling"),
    (lambda r: r["kind"] == "duty", "no MoE duty records"),
])
def test_fit_says_what_is_missing(drop, match):
    lone = duty("c", "wave", 0, 0.9, 1700.0, TOP)   # an anchor alone keeps the top clock: the rest are capped
    other = make_record("moe", "kernel", {"config": "a", "schedule": "wave"}, {"kernel_us": flat_stats(9.0)},
                        {"ok": True}, PLATFORM, "test", False)   # never fitted
    with pytest.raises(PowerFitError, match=match):
        fit_moe_clock_law(recordset([r for r in law_records() + [lone] if not drop(r)] + [other]))


def test_law_checks_and_names_what_it_lacks():
    law = MoEClockLaw(0.5, (("a", 1800.0),), ((("a", "wave"), 1500.0),))
    with pytest.raises(ValueError, match="no ceiling for 'b'"):
        law.ceiling_mhz("b")
    with pytest.raises(ValueError, match="no anchor for 'a' interleaved"):
        law.anchor_mhz("a", "interleaved")
    for bad in (dict(beta=-1.0), dict(beta=float("nan")), dict(ceilings=(("a", 0.0),))):
        with pytest.raises(ValueError):
            MoEClockLaw(**{"beta": 0.5, "ceilings": (("a", 1800.0),), "anchors": (), **bad})
    assert law.to_dict()["anchors_mhz"] == {"a wave": 1500.0}


def test_solve_schedule_anchors_a_compute_bound_kernel_and_lifts_a_waiting_one():
    law = MoEClockLaw(0.5, (("a", 1800.0),), ((("a", "wave"), 1500.0),))
    # the kernel computes all the time: its clock is its anchor, its time the local one at that clock
    alone = solve_schedule(law, "a", "wave", lambda s, local: 100.0 * s)
    assert alone["predicted_mhz"] == pytest.approx(1500.0)
    assert alone["kernel_us"] == pytest.approx(100.0 * 1800 / 1500)
    assert alone["compute_scale"] == pytest.approx(1800 / 1500)
    # 40 us on the link that no clock shortens: busier SMs wait, the clock rises to the fixed point
    waits = solve_schedule(law, "a", "wave", lambda s, local: 100.0 * s + (0.0 if local else 40.0))
    s = waits["compute_scale"]
    assert 1500.0 < waits["predicted_mhz"] < 1800.0 and s == pytest.approx(1800.0 / waits["predicted_mhz"])
    assert waits["kernel_us"] == pytest.approx(100.0 * s + 40.0, rel=1e-3)
    ratio = waits["kernel_us"] / (100.0 * 1800 / 1500 * s / (1800 / 1500))
    assert waits["predicted_mhz"] == pytest.approx(1500.0 * ratio ** 0.5, rel=1e-3)


SMALL = {"hidden": 256, "intermediate": 256, "experts": 8, "topk": 2, "tokens": 256, "block_m": 64,
         "block_n1": 64, "block_n2": 64, "n_streams": 8, "compute": "roofline", "tile_fixed_us": 5.0}


def small_params(**over):
    from xsim.params import resolve

    return resolve(builder.PARAMS, {**SMALL, **over}, "test")


def test_compute_scale_stretches_the_compute_and_not_the_link():
    host = resolve_platform("h200-pcie-host")
    local = builder.without_link(host)
    t = {c: builder.simulate(small_params(schedule="wave", compute_scale=c), local, trace=False)[1]["kernel_us"]
         for c in (1.0, 2.0)}
    assert t[2.0] == pytest.approx(2 * t[1.0], rel=0.02)   # only the stores' issue does not scale


def test_simulate_solves_both_schedules_between_anchor_and_ceiling():
    host = resolve_platform("h200-pcie-host")
    law = MoEClockLaw(0.8, (("small", 1800.0),), ((("small", "wave"), 1500.0), (("small", "interleaved"), 1400.0)))
    out = simulate(small_params(), "small", host, law)
    for schedule, f0 in (("wave", 1500.0), ("interleaved", 1400.0)):
        got = out[schedule]
        assert f0 <= got["predicted_mhz"] <= 1800.0
        assert got["compute_scale"] == pytest.approx(1800.0 / got["predicted_mhz"])
    assert out["speedup"] == pytest.approx(out["wave"]["kernel_us"] / out["interleaved"]["kernel_us"])


def report_records(tmp_path, timing: str | None, with_law: bool) -> str:
    """The moe report tests' two configs, timed ``timing``, beside duty records of both (or none)."""
    from test_report_moe import record, stats, write_records

    path = tmp_path / "moe.jsonl"
    recs = [json.loads(line) for line in open(write_records(path))]
    for r in recs:
        if r["kind"] == "kernel" and timing:
            r["params"]["timing"] = timing
            r["stats"]["run_clock_mhz"] = stats(1500.0)
    for config in ("moe1-qwen3-30b-bf16-zipf-4096", "not-a-scenario") if with_law else ():
        for d in law_records():
            if d["params"]["config"] == "a":
                recs.append(record("duty", {**d["params"], "config": config}, d["stats"]))
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(path)


def run_report(capsys, path: str, *extra: str) -> tuple[dict, list[str]]:
    """(the moe summary, the report's notes) of ``xsim report --json`` on ``path``."""
    from xsim.cli import main

    assert main(["report", "--experiment", "moe", "--records", path, "--platform", "h200-pcie-host",
                 "--moe-spread-seeds", "1", "--json", *extra]) == 0
    doc = json.loads(capsys.readouterr().out)
    return doc["experiments"]["moe"], doc["notes"]


def test_report_predicts_steady_records_at_the_cap_by_the_records_law(capsys, tmp_path):
    doc, notes = run_report(capsys, report_records(tmp_path, "steady", True))
    assert notes == []
    assert doc["configs_at_cap"] == ["moe1-qwen3-30b-bf16-zipf-4096", "not-a-scenario"]
    assert doc["clock_law"]["beta"] == pytest.approx(0.7) and doc["clock_law"]["source"] == "moe.jsonl"
    assert math.isfinite(doc["speedup_abs_err_max_fixed_clock"]) and math.isfinite(doc["clock_err_max_percent"])
    fixed, _ = run_report(capsys, report_records(tmp_path, "steady", True), "--clock-law", "none")
    assert "clock_law" not in fixed
    assert fixed["speedup_abs_err_max"] == pytest.approx(doc["speedup_abs_err_max_fixed_clock"])


def test_report_keeps_burst_records_at_one_clock_and_notes_a_missing_law(capsys, tmp_path, monkeypatch):
    burst, notes = run_report(capsys, report_records(tmp_path, None, True))
    assert "clock_law" not in burst and notes == []
    monkeypatch.setattr("calibration.records.load_shipped_records", lambda *a, **k: None)
    steady, notes = run_report(capsys, report_records(tmp_path, "steady", False))
    assert "clock_law" not in steady
    assert notes[0].startswith("moe: no duty records (experiment moe, kind duty) for h200-pcie-host")
