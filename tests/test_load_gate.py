"""The load gate's parameters: validation, profile JSON (loader and saver), command-line overrides."""

import dataclasses
import json
import math

import pytest

from helpers import toy_platform
from xsim.cli import main
from xsim.load_gate import LoadGate, LoadGateError, gate_from_json, gate_to_json, with_gate
from xsim.platform import Platform, ProfileError, load_profile, save_profile


def test_gate_validates_like_simpy():
    assert LoadGate(0).threshold_bytes == 0.0 and LoadGate(0).scope == "producer"
    with pytest.raises(LoadGateError, match='"threshold_bytes" must be a number >= 0'):
        LoadGate(-1.0)
    with pytest.raises(LoadGateError, match='"threshold_bytes"'):
        LoadGate(float("nan"))
    assert LoadGate(322400.0, "fifo").scope == "fifo"
    with pytest.raises(LoadGateError, match='"scope" must be one of producer, link, fifo'):
        LoadGate(10.0, "sm")
    assert LoadGate(math.inf).is_open and not LoadGate(1e12).is_open


def test_gate_json_helpers():
    assert gate_from_json(None) is None
    assert gate_from_json({"threshold_bytes": 12345.0, "scope": "link"}) == LoadGate(12345.0, "link")
    assert gate_from_json({"threshold_bytes": 7}) == LoadGate(7.0, "producer")
    assert gate_from_json({"threshold_bytes": 9.0, "scope": "fifo"}) == LoadGate(9.0, "fifo")
    assert gate_to_json(LoadGate(5.0, "link")) == {"threshold_bytes": 5.0, "scope": "link"}
    assert gate_to_json(None) is None and gate_to_json(LoadGate(math.inf)) is None  # JSON has no infinity
    for bad, message in (([1], "must be an object or null"), ({"scope": "link"}, "missing the key"),
                         ({"threshold_bytes": 1, "bytes": 2}, "unknown key 'bytes'")):
        with pytest.raises(LoadGateError, match=message):
            gate_from_json(bad)


def test_with_gate_overrides():
    gate = LoadGate(100.0, "link")
    assert with_gate(gate) is gate and with_gate(None) is None
    assert with_gate(gate, threshold_bytes=5.0) == LoadGate(5.0, "link")
    assert with_gate(gate, scope="producer") == LoadGate(100.0, "producer")
    assert with_gate(None, threshold_bytes=0.0) == LoadGate(0.0, "producer")
    with pytest.raises(LoadGateError, match="needs a threshold"):
        with_gate(None, scope="link")


@pytest.mark.parametrize("gate", [None, LoadGate(0.0), LoadGate(32768.0, "link"), LoadGate(322400.0, "fifo")])
def test_profile_round_trip(tmp_path, gate):
    platform = dataclasses.replace(toy_platform(), load_gate=gate)
    path = tmp_path / "p.json"
    save_profile(platform, path)
    data = json.loads(path.read_text())
    assert ("load_gate" in data) == (gate is not None)   # a profile without a gate is written as before
    assert load_profile(path) == platform
    assert Platform.from_dict({**data, "load_gate": None}).load_gate is None


def test_profile_rejects_a_bad_gate():
    data = toy_platform().to_dict()
    with pytest.raises(ProfileError, match='"threshold_bytes" must be a number >= 0'):
        Platform.from_dict({**data, "load_gate": {"threshold_bytes": -3}})
    with pytest.raises(ProfileError, match='"load_gate" must be a LoadGate'):
        dataclasses.replace(toy_platform(), load_gate={"threshold_bytes": 1})


def test_platform_overrides_set_the_gate():
    p = toy_platform().with_overrides(load_gate_bytes=4096.0, load_gate_scope="link")
    assert p.load_gate == LoadGate(4096.0, "link") and p.status == "override"
    assert p.provenance["overridden"] == ["load_gate_bytes", "load_gate_scope"]
    assert p.with_overrides(load_gate_scope="producer").load_gate == LoadGate(4096.0, "producer")
    assert p.with_overrides(load_gate_scope="fifo").load_gate == LoadGate(4096.0, "fifo")
    with pytest.raises(ProfileError, match="needs a threshold"):
        toy_platform().with_overrides(load_gate_scope="link")


def _fa_json(capsys, *flags):
    argv = ["simulate", "fa-a2a-host", "--platform", "h200-pcie-host", "--set", "seq_len=1024", *flags, "--json"]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_asks_what_if_the_gate_were(capsys):
    """The FA+A2A builder's Q-loops load memory: a gate of 0 bytes holds them behind the CTA's own
    stores (stall > 0, a longer kernel); ``none`` is the profile without a gate."""
    base, gated = _fa_json(capsys, "--load-gate-bytes", "none"), _fa_json(capsys, "--load-gate-bytes", "0")
    assert base["stall_us"]["max"] == 0.0
    assert gated["stall_us"]["mean"] > 0.0 and gated["kernel_us"]["mean"] > base["kernel_us"]["mean"]
    link = _fa_json(capsys, "--load-gate-bytes", "0", "--load-gate-scope", "link")
    assert link["kernel_us"]["mean"] >= gated["kernel_us"]["mean"]   # the whole link drains, not one CTA
    fifo = _fa_json(capsys, "--load-gate-bytes", "0", "--load-gate-scope", "fifo")
    assert base["kernel_us"]["mean"] < fifo["kernel_us"]["mean"] <= link["kernel_us"]["mean"]
    assert _fa_json(capsys, "--load-gate-bytes", "none") == base


@pytest.mark.parametrize("flags, message", [
    (["--load-gate-scope", "link"], "needs a threshold"),
    (["--load-gate-bytes", "-1"], "--load-gate-bytes must be >= 0"),
])
def test_cli_gate_errors_are_one_line(capsys, flags, message):
    assert main(["simulate", "periodic", "--platform", "paper-8gpu", *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_stall_mode_validates():
    assert LoadGate(1.0).mode == "start" and not LoadGate(1.0).stalls
    assert LoadGate(1.0, "link", "stall").stalls and LoadGate(1.0, "producer", "stall").stalls
    with pytest.raises(LoadGateError, match='"mode" must be one of start, stall'):
        LoadGate(1.0, "link", "pause")
    with pytest.raises(LoadGateError, match='"mode" stall needs scope producer or link'):
        LoadGate(1.0, "fifo", "stall")


def test_stall_mode_json():
    """The mode is written only when it is not start, so start-mode profiles stay byte for byte."""
    assert gate_to_json(LoadGate(5.0, "link")) == {"threshold_bytes": 5.0, "scope": "link"}
    stall = LoadGate(5.0, "link", "stall")
    assert gate_to_json(stall) == {"threshold_bytes": 5.0, "scope": "link", "mode": "stall"}
    assert gate_from_json(gate_to_json(stall)) == stall
    assert gate_from_json({"threshold_bytes": 5.0, "scope": "link", "mode": "start"}) == LoadGate(5.0, "link")
    with pytest.raises(LoadGateError, match='"mode" must be one of'):
        gate_from_json({"threshold_bytes": 5.0, "mode": 1})
    data = toy_platform().to_dict()
    with pytest.raises(ProfileError, match='"mode" stall needs scope'):
        Platform.from_dict({**data, "load_gate": {"threshold_bytes": 5.0, "scope": "fifo", "mode": "stall"}})


def test_stall_profile_round_trip(tmp_path):
    platform = dataclasses.replace(toy_platform(), load_gate=LoadGate(329500.0, "link", "stall"))
    path = tmp_path / "p.json"
    save_profile(platform, path)
    assert json.loads(path.read_text())["load_gate"]["mode"] == "stall"
    assert load_profile(path) == platform


def test_with_gate_mode_overrides():
    gate = LoadGate(100.0, "link")
    assert with_gate(gate, mode="stall") == LoadGate(100.0, "link", "stall")
    assert with_gate(LoadGate(100.0, "link", "stall"), threshold_bytes=5.0) == LoadGate(5.0, "link", "stall")
    assert with_gate(LoadGate(100.0, "link", "stall"), mode="start") == gate
    with pytest.raises(LoadGateError, match="a load gate mode needs a threshold"):
        with_gate(None, mode="stall")
    p = toy_platform().with_overrides(load_gate_bytes=4096.0, load_gate_scope="link", load_gate_mode="stall")
    assert p.load_gate == LoadGate(4096.0, "link", "stall") and "load_gate_mode" in p.provenance["overridden"]


def test_cli_asks_what_if_the_gate_stalled(capsys):
    """``--load-gate-mode stall`` on the FA+A2A Q-loops: a different run (Q-loops that run while the
    next wave's stores arrive are paused, which spaces the later waves out: not necessarily a longer
    kernel), still held; ``start`` is the default."""
    start = _fa_json(capsys, "--load-gate-bytes", "300000", "--load-gate-scope", "link")
    stall = _fa_json(capsys, "--load-gate-bytes", "300000", "--load-gate-scope", "link", "--load-gate-mode", "stall")
    assert stall != start and stall["stall_us"]["mean"] > 0.0
    assert _fa_json(capsys, "--load-gate-bytes", "300000", "--load-gate-scope", "link", "--load-gate-mode",
                    "start") == start


@pytest.mark.parametrize("flags, message", [
    (["--load-gate-mode", "stall"], "a load gate mode needs a threshold"),
    (["--load-gate-bytes", "1000", "--load-gate-scope", "fifo", "--load-gate-mode", "stall"], "needs scope producer or link"),
])
def test_cli_mode_errors_are_one_line(capsys, flags, message):
    assert main(["simulate", "periodic", "--platform", "paper-8gpu", *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
