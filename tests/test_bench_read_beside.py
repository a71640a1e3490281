"""benchmarks/read_beside.py: cells from read-beside records (ratio, load, saturation), the table, the
script's output file and its error paths (no device)."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import read_beside as rbb  # noqa: E402


def _rec(dest, storers, gap, reader_us, store_gbps=None, ok=True, fp=8.0, loads="tma"):
    stats = {"reader_us": {"median": reader_us}}
    if store_gbps is not None:
        stats["store_gbps"] = {"median": store_gbps}
    p = {"loads": loads, "footprint_mb": fp, "storers": storers, "gap_us": gap, "destination": dest,
         "shared": True, "passes": 2, "readers": 132 - storers}
    return {"kind": "read-beside", "params": p, "stats": stats, "check": {"ok": ok}}


def test_cells_pair_host_with_local_and_mark_saturation():
    recs = [_rec("none", 0, 0.0, 100.0),
            _rec("host", 33, 40.0, 160.0, store_gbps=25.0), _rec("local", 33, 40.0, 100.0, store_gbps=25.0),
            _rec("host", 33, 0.0, 2000.0, store_gbps=49.0), _rec("local", 33, 0.0, 100.0, store_gbps=900.0),
            _rec("host", 16, 40.0, 1.0, store_gbps=1.0)]                       # no local pair: no cell
    cs = rbb.cells(recs, 50.0)
    assert [(c["storers"], c["gap_us"]) for c in cs] == [(33, 0.0), (33, 40.0)]
    assert cs[1]["ratio"] == pytest.approx(100 / 160) and cs[1]["load"] == pytest.approx(0.5) and not cs[1]["saturated"]
    assert cs[0]["ratio"] == pytest.approx(0.05) and cs[0]["saturated"]
    lines = rbb.table(cs)
    assert "| 33 | 0.050 (sat) | 0.625 (0.50) |" in lines
    assert cs[1]["reader_gbps_local"] == pytest.approx(2 * 8 * 2**20 / 100 / 1e3)    # 16 MB read in 100 us
    # the slope over the one unsaturated cell with >= 33 storers: 1 - 0.625 = a x 0.5
    assert rbb.slopes(cs)[-1] == "| tma | 8 | 0 | 33 | 167.8 | 1 | 0.75 |"


def test_paced_readers_are_their_own_grid():
    recs = [_rec("host", 33, 40.0, 160.0, store_gbps=25.0), _rec("local", 33, 40.0, 100.0),
            _rec("host", 33, 40.0, 300.0, store_gbps=25.0), _rec("local", 33, 40.0, 250.0)]
    for r in recs[2:]:
        r["params"]["read_gap_ns"] = 500
    cs = rbb.cells(recs, 50.0)
    assert [(c["read_gap_ns"], round(c["ratio"], 3)) for c in cs] == [(0, 0.625), (500, 0.833)]
    assert any("readers paced 500 ns a tile" in line for line in rbb.table(cs))


def test_a_failed_check_is_left_out():
    recs = [_rec("host", 33, 40.0, 160.0, store_gbps=25.0, ok=False), _rec("local", 33, 40.0, 100.0)]
    assert rbb.cells(recs, 50.0) == []


def test_the_shipped_records_make_the_table(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rbb, "ROOT", tmp_path)
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    shipped = Path(__file__).resolve().parent.parent / "calibration" / "records" / "h100-pcie-host-read-beside.jsonl"
    assert rbb.main([str(shipped)]) == 0
    text = (tmp_path / "benchmarks" / "results" / "read_beside_h100-pcie-host.txt").read_text()
    assert "tma loads, footprint 8 MB" in text and "| 99 |" in text and text == capsys.readouterr().out


def test_no_usable_records_is_one_line_and_exit_2(tmp_path, capsys):
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps(_rec("local", 33, 40.0, 100.0)) + "\n")
    assert rbb.main([str(f)]) == 2
    assert rbb.main([str(tmp_path / "missing.jsonl")]) == 2
    assert rbb.main(["--platform", "no-such-platform", str(f)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("read_beside:") for line in err)
