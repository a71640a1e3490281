"""benchmarks/moe_fused_des_queue.py: the DES's X-Stage beside the one rebuilt from the fused kernel's stamps, on one
shipped trace (the DES on the very table the kernel ran), and its error paths."""

import sys
from pathlib import Path

import numpy as np
import pytest

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
    assert (tmp_path / "benchmarks" / "results" / "moe_fused_des_queue_h100-pcie-host.txt").read_text() == out


def test_the_rebuilt_queue_counts_only_the_kernel_span():
    # an L2 tile's mainloop at 0-500 ns, then 2000 B stored at 500-600 ns; the kernel ends at 2 us. At 1 B/ns the
    # link drains from 500 ns to 2.5 us: idle the first 5 of 20 bins, the stage above 1000 B for 9 bins
    st = np.array([[0, 0, 500, 500, 600, 2000]])
    r = mfq.rebuilt(st, np.array([2000]), rate=1.0, gate=1000.0, kind=np.array([1]))
    assert r["span_us"] == pytest.approx(2.0) and r["above"] == pytest.approx(9 / 20)
    assert r["idle"] == pytest.approx(5 / 20) and r["l2_idle"] == pytest.approx(1.0)
    assert r["q_max"] == pytest.approx(1900.0)


def test_waits_split_an_l2_tile_s_wait_at_its_m_block_s_last_l1_tile():
    # L1 tile of m-block 0 ends at 5 us; the L2 tile starts at 2 us, its mainloop at 6 us: 3 us dependency, 1 us poll
    st = np.array([[0, 1000, 4000, 4000, 4000, 5000], [2000, 6000, 7000, 7000, 7500, 7500]])
    tiles = np.array([[0, 0, 0, 0], [1, 0, 0, 0]])
    pre, after, dep = mfq.waits(st, tiles)
    assert pre.tolist() == [1.0] and after.tolist() == [1.0] and dep.tolist() == [3.0]


def test_running_counts_the_intervals_over_each_bin():
    assert mfq.running(np.array([0.0, 0.25]), np.array([0.5, 1.0]), 10, 0.1).tolist() == \
        [1, 1, 2, 2, 2, 1, 1, 1, 1, 1]


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert mfq.main([str(tmp_path / "missing.npz")]) == 2
    assert mfq.main(["--platform", "no-such", str(_one_point(tmp_path))]) == 2
    assert mfq.main([str(_one_point(tmp_path, rename="moe1-no-such-layer|wave"))]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("moe_fused_des_queue:") for line in err)
