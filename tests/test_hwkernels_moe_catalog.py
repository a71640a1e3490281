"""The MoE bench's configs: built-in list, names, scenario TOMLs (no GPU needed)."""

import pytest

from hwkernels import moe_catalog
from xsim.moe.shapes import MoEShape

SCENARIO = """
name = "moe1-tiny-bf16-zipf"
builder = "moe"
[params]
hidden = 256
intermediate = 256
experts = 8
topk = 2
tokens = 64
ep = 1
precision = "bf16"
block_m = 64
block_n1 = 64
block_n2 = 64
staging_depth = 0
routing = "zipf"
skew = 1.2
seed = 3
schedule = "both"
"""


def test_builtin_configs_cover_both_precisions_and_routings():
    cfgs = list(moe_catalog.BUILTIN.values())
    assert len(cfgs) == 18
    assert {c.shape.precision for c in cfgs} == {"bf16", "fp8"}
    assert {c.routing for c in cfgs} == {"balanced", "zipf", "hot"}


def test_scenario_toml_params_table(tmp_path):
    path = tmp_path / "moe1-tiny.toml"
    path.write_text(SCENARIO)
    (cfg,) = moe_catalog.load_configs(str(path))
    assert cfg.name == "moe1-tiny-bf16-zipf"
    assert cfg.shape == MoEShape(hidden=256, intermediate=256, experts=8, topk=2, tokens=64,
                                 block_m=64, block_n1=64, block_n2=64)
    assert (cfg.routing, cfg.skew, cfg.seed) == ("zipf", 1.2, 3)
    p = cfg.params("wave", 0.0, "host")
    assert p["config"] == cfg.name and p["schedule"] == "wave" and p["destination"] == "host"
    assert p["hidden"] == 256 and p["routing"] == "zipf" and p["lead"] == 0.0


def test_builtin_name_and_unknown_name():
    (cfg,) = moe_catalog.load_configs("dsv3-fp8-hot")
    assert cfg.shape.precision == "fp8" and cfg.routing == "hot"
    with pytest.raises(ValueError, match='"configs"'):
        moe_catalog.load_configs("no-such-config")


def test_scenario_lead_is_read_and_resolved(tmp_path):
    path = tmp_path / "moe1-tiny.toml"
    path.write_text(SCENARIO.replace('schedule = "both"', 'schedule = "both"\nlead = 3'))
    (cfg,) = moe_catalog.load_configs(str(path))
    assert cfg.lead == 3.0
    from xsim.moe.lead import candidate_leads
    from xsim.moe.schedule import d_knee, default_lead

    default = float(default_lead(cfg.shape, 132))
    items = moe_catalog.parse_leads("scenario, default,7,scenario")
    assert items == ("scenario", "default", 7, "scenario")
    assert moe_catalog.leads_for(cfg, items, 132) == [3.0, default, 7.0]     # each lead once, in order
    plain = moe_catalog.load_configs("dsv3-fp8-hot")[0]
    assert plain.lead is None and moe_catalog.leads_for(plain, ("scenario",), 132) == [
        float(default_lead(plain.shape, 132))]
    cands = [float(lead) for _, lead in candidate_leads(d_knee(cfg.shape, 132))]
    assert moe_catalog.leads_for(cfg, ("candidates",), 132) == cands


@pytest.mark.parametrize("spec", ["", "0", "-2", "1.5", "best", "scenario,x"])
def test_bad_lead_specs_are_one_line_errors(spec):
    with pytest.raises(ValueError, match='"lead"') as e:
        moe_catalog.parse_leads(spec)
    assert "\n" not in str(e.value)


def test_within_budget_starts_no_config_after_the_budget(capsys):
    clock = iter([0.0, 0.0, 5.0, 11.0, 12.0]).__next__      # start, then one reading per config
    cfgs = [moe_catalog.Config(n, MoEShape(hidden=128, intermediate=128, experts=4, topk=2, tokens=24))
            for n in ("a", "b", "c", "d")]
    assert [c.name for c in moe_catalog.within_budget(cfgs, 10.0, clock)] == ["a", "b"]
    assert capsys.readouterr().out.splitlines() == ["c: skipped (time budget)", "d: skipped (time budget)"]
    assert len(list(moe_catalog.within_budget(cfgs, 0.0))) == 4          # 0: no budget
