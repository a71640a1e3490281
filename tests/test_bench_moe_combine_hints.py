"""benchmarks/moe_combine_hints.py: the hints call's runs told apart and set over the plain local runs, and its errors."""

import copy
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import moe_combine_hints as mch  # noqa: E402

SHIPPED = (Path(__file__).resolve().parent.parent / "calibration" / "records" / "repeats"
           / "h100-pcie-host-moe-fused-traces-rest-f82cfa3.jsonl.gz")
CONFIG = "moe1-qwen3.5-bf16-zipf-1024"


def _records() -> list[dict]:
    recs = [json.loads(line) for line in gzip.decompress(SHIPPED.read_bytes()).splitlines()]
    return [r for r in recs if r["params"].get("config") == CONFIG and r["params"].get("schedule") == "wave"]


def _scaled(rec: dict, factor: float, hint: str = "") -> dict:
    rec = copy.deepcopy(rec)
    for key in ("l1_mainloop_us", "l2_mainloop_us"):
        rec["stats"][key]["median"] *= factor
    if hint:
        rec["params"]["combine_hint"] = hint
    return rec


def test_each_run_over_the_plain_local_runs(tmp_path, capsys):
    host = next(r for r in _records() if r["kind"] == "kernel")
    local = next(r for r in _records() if r["kind"] == "kernel_local")
    rows = [host, _scaled(local, 1.0), _scaled(local, 0.97, "cs"), _scaled(local, 0.99, "evict_first"),
            _scaled(local, 1.02)]
    path = tmp_path / "hints.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert mch.main([str(path), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(f"| {CONFIG} | wave |")).split(" | ")
    assert row[3] == "0.960 / 0.960" and row[4] == "0.980 / 0.980"     # cs 0.97 and evict_first 0.99 over 1.01
    assert row[5] == "1.010 / 1.010"                                    # the second plain run against the mean
    expected = host["stats"]["l2_mainloop_us"]["median"] / (1.01 * local["stats"]["l2_mainloop_us"]["median"])
    assert row[2].split(" / ")[1] == f"{expected:.3f}"
    assert (tmp_path / "moe_combine_hints_h100-pcie-host.txt").read_text() == out
    quiet = out.split("the quiet-link layers (QUIET):")[1]             # qwen3.5 is one: the same summary again
    assert CONFIG in mch.QUIET and "local@cs: L1 median 0.960 (0.960-0.960), L2 median 0.960" in quiet


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert mch.main([str(tmp_path / "missing.jsonl")]) == 2
    assert mch.main([str(SHIPPED), "--out", str(tmp_path)]) == 2          # one plain local run per point only
    assert mch.main([str(SHIPPED), "--platform", "../x"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("moe_combine_hints: ") for line in err)
