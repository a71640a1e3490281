"""Scenario files: the TOML schema, and the platform a scenario is written for."""

import json

import pytest

from xsim.cli import main
from xsim.scenario import ScenarioError, from_dict, load_scenario, shipped_scenarios

PERIODIC = {"name": "p", "builder": "microbench", "params": {"producers": 4, "bursts": 20, "warmup_bursts": 5}}


def test_a_scenario_may_name_its_platform():
    assert from_dict(dict(PERIODIC, platform="h200-pcie-host"), "t").platform == "h200-pcie-host"
    assert from_dict(PERIODIC, "t").platform == ""
    with pytest.raises(ScenarioError, match='"platform" must be a string'):
        from_dict(dict(PERIODIC, platform=3), "t")
    with pytest.raises(ScenarioError, match="unknown top-level key 'platfrom'"):
        from_dict(dict(PERIODIC, platfrom="x"), "t")


def test_every_shipped_application_scenario_names_the_platform_it_was_made_for():
    found = shipped_scenarios()
    for name, s in found.items():
        if name.startswith(("moe1-", "fa-a2a-host")):
            assert s.platform == "h200-pcie-host", name
        if name.startswith(("moe8-", "fa-a2a-paper")):
            assert s.platform == "paper-8gpu", name


def test_simulate_defaults_to_the_scenarios_platform(tmp_path, capsys):
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\nbuilder = "microbench"\nplatform = "h200-pcie-host"\n'
                    '[params]\nproducers = 4\nbursts = 20\nwarmup_bursts = 5\n')
    assert main(["simulate", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["platform"] == "h200-pcie-host"
    assert main(["simulate", str(path), "--platform", "h200-nvlink-x2", "--json"]) == 0   # still overridable
    assert json.loads(capsys.readouterr().out)["platform"] == "h200-nvlink-x2"


def test_a_scenario_naming_an_unknown_platform_is_one_line(tmp_path, capsys):
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\nbuilder = "microbench"\nplatform = "no-such-gpu"\n[params]\nproducers = 4\n')
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "no-such-gpu" in err and len(err.splitlines()) == 1
    assert load_scenario(str(path)).platform == "no-such-gpu"
