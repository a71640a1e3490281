"""The what-if tool's lead pick (xsim.moe.lead) and the catalog's shipped leads."""

import math

import pytest

from xsim.builders import moe
from xsim.moe import catalog, lead
from xsim.moe.schedule import d_knee, default_lead
from xsim.params import resolve

SMALL = {"hidden": 512, "intermediate": 512, "experts": 16, "topk": 4, "tokens": 512, "routing": "zipf",
         "skew": 1.2, "compute": "roofline", "n_streams": 16}


def small_params(**over):
    return resolve(moe.PARAMS, {**SMALL, **over}, "small")


def test_candidates_round_up_as_the_default_and_drop_duplicates():
    assert lead.candidate_leads(8.25) == [(1.0, 9), (1.5, 13), (2.0, 17), (3.0, 25), (4.0, 33)]
    assert lead.candidate_leads(0.92) == [(1.0, 1), (1.5, 2), (3.0, 3), (4.0, 4)]   # 2 x 0.92 rounds to 2 too
    assert lead.candidate_leads(0.0) == [(1.0, 1)]
    assert lead.candidate_leads(11.0, (2, 1)) == [(1.0, 11), (2.0, 22)]
    assert [c for m, c in lead.candidate_leads(11.0) if m == 2.0] == [22]     # == ceil(2 D_knee)


@pytest.mark.parametrize("knee, multiples", [(-1.0, (1,)), (math.nan, (1,)), ("3", (1,)), (3.0, ()),
                                             (3.0, (0,)), (3.0, (1, math.inf))])
def test_bad_candidates_are_one_line_errors(knee, multiples):
    with pytest.raises(ValueError) as e:
        lead.candidate_leads(knee, multiples)
    assert "\n" not in str(e.value)


def test_pick_is_the_lowest_predicted_time_and_deterministic():
    platform = catalog.host_platform()
    params = small_params(lead=5.0, spread_seeds=1)     # its own lead and seeds are ignored
    a, b = lead.pick_lead(params, platform, spread_seeds=2), lead.pick_lead(params, platform, spread_seeds=2)
    assert a == b
    cfg = moe.Config(params, platform)
    knee = d_knee(cfg.shape, cfg.n_streams)
    assert a.d_knee == knee and a.default == default_lead(cfg.shape, cfg.n_streams)
    assert [(m, c) for m, c, _ in a.candidates] == lead.candidate_leads(knee)
    assert a.lead == min(a.candidates, key=lambda r: r[2])[1] and a.spread_seeds == (0, 1)
    c = a.candidates[-1]
    _, s = moe.simulate({**params, "schedule": "interleaved", "lead": float(c[1]), "spread_seeds": 2},
                        platform, "fast", trace=False)
    assert a.predicted_us(c[1]) == pytest.approx(s["kernel_us"])        # the mean over both seeds


def test_a_tie_keeps_the_default_lead(monkeypatch):
    monkeypatch.setattr(moe, "simulate", lambda p, *a, **k: (None, {"kernel_us": 100.0}))
    pick = lead.pick_lead(small_params(), catalog.host_platform(), spread_seeds=1)
    assert pick.lead == pick.default and len(pick.candidates) > 1


def test_bad_spread_seeds_are_refused():
    with pytest.raises(ValueError, match='"spread_seeds"'):
        lead.pick_lead(small_params(), catalog.host_platform(), spread_seeds=0)


def test_the_one_gpu_scenarios_ship_a_candidate_lead_with_its_source():
    from xsim.scenario import load_scenario

    for entry in catalog.ONE_GPU:
        sc = load_scenario(entry.name)
        cfg = moe.Config(dict(sc.params), catalog.host_platform())
        cands = [c for _, c in lead.candidate_leads(d_knee(cfg.shape, cfg.n_streams))]
        assert sc.params["lead"] in cands, entry.name
        assert cfg.lead == sc.params["lead"] == catalog.params(entry)["lead"] == catalog.shipped_lead(entry.name)
        assert "what-if tool's pick" in sc.sources["lead"]
    assert all("lead" not in catalog.params(e) for e in catalog.PAPER)


def test_scenario_toml_carries_a_given_lead():
    from xsim.scenario import from_dict, parse_toml

    entry = catalog.ONE_GPU[0]
    sc = from_dict(parse_toml(catalog.scenario_toml(entry, 7, "picked")), "test")
    assert sc.params["lead"] == 7 and sc.sources["lead"] == "picked"
