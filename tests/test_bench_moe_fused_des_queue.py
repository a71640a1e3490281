"""benchmarks/moe_fused_des_queue.py: the DES's X-Stage beside the one rebuilt from the fused kernel's stamps, on one
shipped trace (the DES on the very table the kernel ran), and its error paths."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import moe_fused_des_queue as mfq  # noqa: E402

TRACES = Path(__file__).resolve().parent.parent / "calibration" / "records" / "h100-pcie-host-fused-traces"
KEY = "moe1-hunyuan-large-bf16-balanced-1024|wave"


def _one_point(tmp_path, key=KEY, rename=None) -> Path:
    with np.load(TRACES / "fused-traces-host.npz") as z:
        arrays = {(k.replace(key, rename) if rename else k): z[k] for k in z.files if k.startswith(key + "|")}
    path = tmp_path / "one.npz"
    np.savez(path, commit=np.array("x"), **arrays)
    return path


def test_the_des_runs_the_traced_table_beside_the_rebuilt_queue(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mfq, "ROOT", tmp_path)
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    assert mfq.main([str(_one_point(tmp_path))]) == 0
    out = capsys.readouterr().out
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith(f"| {KEY.split('|')[0]} |")]
    assert [r[2] for r in rows] == ["rebuilt", "DES, gate start", "DES, gate stall", "DES, no link"]
    spans = [float(r[3]) for r in rows]
    assert all(3000 < s < 6000 for s in spans)          # a 4 ms layer, measured and simulated
    assert all(0.0 <= float(r[5]) <= 1.0 for r in rows[:3]) and rows[3][4:9] == ["-"] * 5
    assert all(float(r[9].rstrip(" |")) >= 0 for r in rows)      # the L2 tiles' dependency wait per program
    summary = [line.split(" | ") for line in out.splitlines() if line.startswith("| gate ")]
    assert [r[0] for r in summary] == ["| gate start", "| gate stall"] and all(r[1] == "1" for r in summary)
    span_err = float(summary[0][2].split(" / ")[0])
    assert abs(span_err - (spans[1] / spans[0] - 1)) < 2e-3     # the summary is the table's own numbers
    assert (tmp_path / "benchmarks" / "results" / "moe_fused_des_queue_h100-pcie-host.txt").read_text() == out


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert mfq.main([str(tmp_path / "missing.npz")]) == 2
    assert mfq.main(["--platform", "no-such", str(_one_point(tmp_path))]) == 2
    assert mfq.main([str(_one_point(tmp_path, rename="moe1-no-such-layer|wave"))]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("moe_fused_des_queue:") for line in err)
