"""``xsim calibrate``: reproducible profiles, the shipped one included; errors exit 2 in one line."""

import json
from importlib import resources

import pytest

from calibration.synthetic import small_plan, synthetic_records, write_jsonl
from xsim.cli import main
from xsim.platform import DEFAULT_PLATFORM, load_profile



@pytest.fixture(scope="module")
def synthetic_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cal") / "syn.jsonl"
    write_jsonl(synthetic_records(plan=small_plan()), path)
    return path


def test_calibrate_writes_a_loadable_profile_twice_identically(synthetic_file, tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["calibrate", str(synthetic_file), "-o", str(a), "--name", "syn"]) == 0
    assert "calibrated syn" in capsys.readouterr().out
    assert main(["calibrate", str(synthetic_file), "-o", str(b), "--name", "syn", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(b.read_text())
    assert a.read_bytes() == b.read_bytes()
    platform = load_profile(a)
    assert platform.name == "syn" and platform.status == "measured"
    pv = platform.provenance
    assert pv["records"]["files"][0]["name"] == "syn.jsonl" and len(pv["records"]["sha256"]) == 64
    assert set(pv["heldout"]["errors_percent"]) == {"fluid", "mode-aware", "des"}
    assert pv["fit"]["drain_rate"]["parameters"]["drain_rate_gbps"]["ci95"][0] < platform.drain_rate_gbps


@pytest.mark.parametrize("name", ["h200-nvlink-x2", "h200-pcie-host", "h100-pcie-host"])
def test_calibrate_reproduces_the_shipped_profiles_byte_for_byte(tmp_path, name):
    """Calibrate once from the committed records (and the traces beside them): the shipped profile."""
    records = resources.files("calibration") / "records" / f"{name}-micro.jsonl"
    shipped = resources.files("calibration") / "profiles" / f"{name}.json"
    out = tmp_path / f"{name}.json"
    assert main(["calibrate", str(records), "-o", str(out)]) == 0
    assert out.read_bytes() == shipped.read_bytes()
    assert DEFAULT_PLATFORM == "h200-nvlink-x2"
    pv = load_profile(out).provenance
    des = pv["heldout"]["errors_percent"]["des"]["all"]              # the DES's tails, recorded
    assert {"issue_p90_mape", "issue_max_mape", "n_max_points"} <= set(des)
    assert pv["arbitration"]["model"]["weights_by"] == "sm" and pv["fit"]["t_iss0_threads"]["n_points"] > 0


def test_host_profile_says_what_it_measured():
    platform = load_profile(resources.files("calibration") / "profiles" / "h200-pcie-host.json")
    measured = platform.provenance["measured_on"]
    assert measured["link"] == "PCIe Gen5 x16" and measured["gpu_count"] == 1
    assert platform.gpus == 1 and 40 < platform.drain_rate_gbps < 64          # PCIe Gen5 x16 posted writes
    assert platform.provenance["headline"]["ce_ratio"] >= 0.93               # issue 8's target, met
    assert platform.provenance["arbitration"]["trace"].endswith("_host.npz")


@pytest.mark.parametrize("content, message", [
    ('{"schema": "xstage.record/1"\n', "bad.jsonl:1: broken JSON line"),
    ('{"schema": "xstage.record/1"}\n', "bad.jsonl:1: record is missing"),
])
def test_bad_records_exit_2_with_one_line(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    assert main(["calibrate", str(bad), "-o", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_missing_file_and_unfittable_records_exit_2(tmp_path, capsys, synthetic_file):
    assert main(["calibrate", str(tmp_path / "none.jsonl"), "-o", str(tmp_path / "p.json")]) == 2
    assert "cannot read records" in capsys.readouterr().err
    assert main(["calibrate", str(synthetic_file), "-o", str(tmp_path / "p.json"), "--mechanism", "tma"]) == 2
    assert "no records for mechanism 'tma'" in capsys.readouterr().err
    (tmp_path / "no").write_text("a file where a folder should be")
    assert main(["calibrate", str(synthetic_file), "-o", str(tmp_path / "no" / "dir" / "p.json")]) == 2
    assert "cannot write profile" in capsys.readouterr().err
