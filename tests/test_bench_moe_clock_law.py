"""benchmarks/moe_clock_law.py's file names and its error path (no device, no simulation)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import moe_clock_law as mcl  # noqa: E402


def test_one_output_per_platform_level_and_law():
    names = {(p, lvl, law): mcl.outputs(p, lvl, Path(law) if law else None)[1].name
             for p in ("h200-pcie-host", "h100-pcie-host") for lvl in ("records", "predicted")
             for law in (None, "x/duty-1.jsonl")}
    assert names[("h200-pcie-host", "records", None)] == "moe_clock_law.txt"
    assert names[("h100-pcie-host", "predicted", None)] == "moe_clock_law_h100-pcie-host_predicted.txt"
    assert names[("h100-pcie-host", "predicted", "x/duty-1.jsonl")] == \
        "moe_clock_law_h100-pcie-host_predicted_law-duty-1.txt"
    assert len(set(names.values())) == len(names)   # no run writes over another's result


def test_a_missing_law_file_is_one_line_and_exit_2(capsys, tmp_path):
    steady = mcl.outputs("h100-pcie-host")[0][0]
    assert mcl.main(["--platform", "h100-pcie-host", "--law", str(tmp_path / "none.jsonl"), str(steady)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("moe_clock_law:")


def test_a_gzipped_law_file_names_the_same_result():
    assert mcl.outputs("h100-pcie-host", "predicted", Path("x/duty-1.jsonl.gz"))[1].name == \
        "moe_clock_law_h100-pcie-host_predicted_law-duty-1.txt"
    assert all(p.name.endswith((".jsonl", ".jsonl.gz")) for p in mcl.outputs("h100-pcie-host")[0])
    assert mcl.outputs("h100-pcie-host")[0]   # the shipped steady runs are found, gzipped or not
