"""benchmarks/moe_beside_traces.py: the link rebuilt from stamps, each tile's busy share, the stretch law's
slope, the report and its error paths (synthetic traces, no device)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import moe_beside_traces as mbt  # noqa: E402


def _stamps(rows):
    """[n, 6] stamps from (start, ml_start, ml_end, store_start, store_end, end) rows, ns."""
    return np.array(rows, dtype=np.int64)


def test_the_link_drains_stored_bytes_at_r():
    st = _stamps([[0, 0, 0, 0, 100, 100]])
    busy, t0 = mbt.link_busy(st, np.array([1000]), rate_gbps=1.0)       # 1000 B at 1 B/ns: 1000 ns busy
    assert t0 == 0.0 and busy[:10].sum() == pytest.approx(10.0) and busy[10:].sum() == pytest.approx(0.0)
    assert mbt.busy_share(busy, t0, np.array([0.0, 500.0, 2000.0]), np.array([1000.0, 1500.0, 3000.0])) \
        == pytest.approx([1.0, 0.5, 0.0])


def test_above_marks_the_bins_holding_more_than_the_threshold():
    st = _stamps([[0, 0, 0, 0, 100, 100]])            # 2000 B into the stage in the first bin, 100 B out per bin
    above, t0 = mbt.link_busy(st, np.array([2000]), rate_gbps=1.0, above=1000.0)
    assert t0 == 0.0 and above[:9].tolist() == [1.0] * 9 and above[9:].sum() == 0.0   # 1900 .. 1100 B, then 1000


def test_a_stretch_proportional_to_busy_time_gives_its_slope():
    # one L2 tile stores 2000 B at 0-100 ns: at 1 B/ns the link is busy to 2000 ns. Three L1 mainloops of
    # 400 ns over the link run inside that time, half inside, after it; locally 1 - 0.5 x busy as long
    busy = [1.0, 0.5, 0.0]
    host = [[0, 0, 0, 0, 100, 100]] + [[s, s, s + 400, 0, 0, s + 400] for s in (0, 1800, 3000)]
    local = [[0, 0, 0, 0, 100, 100]] + [[s, s, s + 400 * (1 - 0.5 * b), 0, 0, s + 400]
                                        for s, b in zip((0, 1800, 3000), busy)]
    tiles = np.array([[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 2]])
    rows = mbt.point_rows(_stamps(host), _stamps(local), tiles, np.array([2000, 0, 0, 0]), 1.0)
    share, speed = rows["L1"]
    assert share == pytest.approx(busy) and speed == pytest.approx([0.5, 0.75, 1.0])
    assert mbt.slope(share, speed) == pytest.approx(0.5)
    assert len(rows["L2"][0]) == 0              # the L2 tile has no mainloop here: left out
    assert np.isnan(mbt.slope(np.zeros(3), np.ones(3)))


def test_the_report_and_its_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mbt, "ROOT", tmp_path)
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    st = _stamps([[0, 0, 50, 50, 100, 100], [0, 0, 300, 0, 0, 300]])
    path = tmp_path / "t.npz"
    np.savez(path, commit=np.array("abc1234"), **{"c|own-1|host|stamps": st, "c|own-1|local|stamps": st,
                                                   "c|own-1|tiles": np.array([[1, 0, 0, 0], [0, 0, 0, 0]]),
                                                   "c|own-1|store_bytes": np.array([100, 0])})
    assert mbt.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "| c own-1 | L1 |" in out and "| c own-1 | L2 |" in out and "abc1234" in out
    assert (tmp_path / "benchmarks" / "results" / "moe_beside_traces_h100-pcie-host.txt").read_text() == out


def test_a_host_file_pairs_with_a_local_file_under_a_stem(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mbt, "ROOT", tmp_path)
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    st = _stamps([[0, 0, 50, 50, 100, 100], [0, 0, 300, 0, 0, 300]])
    table = {"c|wave|tiles": np.array([[1, 0, 0, 0], [0, 0, 0, 0]]), "c|wave|store_bytes": np.array([100, 0])}
    np.savez(tmp_path / "h.npz", commit=np.array("abc1234"), **{"c|wave|host|stamps": st}, **table)
    np.savez(tmp_path / "l.npz", commit=np.array("def5678"), **{"c|wave|local|stamps": st}, **table)
    assert mbt.main(["--name", "moe_fused_traces", str(tmp_path / "h.npz"), str(tmp_path / "l.npz")]) == 0
    out = capsys.readouterr().out
    assert "| c wave | L1 |" in out and "abc1234, def5678" in out
    assert (tmp_path / "benchmarks" / "results" / "moe_fused_traces_h100-pcie-host.txt").read_text() == out
    assert mbt.main(["--name", "../x", str(tmp_path / "h.npz")]) == 2
    assert capsys.readouterr().err.startswith("moe_beside_traces: --name")


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    empty = tmp_path / "e.npz"
    np.savez(empty, commit=np.array("x"))
    assert mbt.main([str(empty)]) == 2
    assert mbt.main([str(tmp_path / "missing.npz")]) == 2
    assert mbt.main(["--platform", "no-such", str(empty)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("moe_beside_traces:") for line in err)


def test_the_shipped_traces_make_the_table(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mbt, "ROOT", tmp_path)
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    shipped = (Path(__file__).resolve().parent.parent / "calibration" / "records" / "h100-pcie-host-beside-traces"
               / "traces-probe-h1408-e16-t1024.npz")
    assert mbt.main([str(shipped)]) == 0
    out = capsys.readouterr().out
    assert "| probe-h1408-e16-t1024 own-12 | L2 |" in out and "700ac67" in out
    never = out.split("never saw the stage above the gate")[1]
    assert "| probe-h1408-e16-t1024 own-12 |" in never and "median" in never.splitlines()[-1]
