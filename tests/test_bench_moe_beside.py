"""benchmarks/moe_beside.py: rows from beside records (rate, ratios) and its error paths (no device)."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import moe_beside as mb  # noqa: E402


def _rec(dest, pattern, k, l1, l2, window=None, ok=True, mhz=1500.0):
    stats = {"kernel_us": {"median": 100.0}, "l2_mainloop_us": {"median": l2}, "run_clock_mhz": {"median": mhz},
             ("l1_mainloop_us" if pattern == "own" else "l1_during_us"): {"median": l1}}
    if window:
        stats["store_window_us"] = {"median": window}
    p = {"config": "c", "pattern": pattern, "destination": dest, "l2_bytes": 5_000_000,
         "l1_per_l2": k if pattern == "own" else None, "storers": k if pattern == "beside" else 132}
    return {"kind": "beside", "params": p, "stats": stats, "check": {"ok": ok}}


def test_rows_pair_host_with_local_and_read_the_right_l1():
    recs = [_rec("host", "own", 2, 20.0, 44.0, window=200.0, mhz=1650.0), _rec("local", "own", 2, 18.0, 40.0),
            _rec("host", "beside", 33, 19.0, 41.0, window=100.0), _rec("local", "beside", 33, 19.0, 41.0),
            _rec("host", "own", 4, 1.0, 1.0, window=1.0)]              # no local pair: no row
    rs = mb.rows(recs, 50.0)
    assert [(r["pattern"], r["k"]) for r in rs] == [("beside", 33), ("own", 2)]
    own = rs[1]
    assert own["gbps"] == pytest.approx(25.0) and own["load"] == pytest.approx(0.5)   # 5 MB / 200 us
    assert own["l1_ratio"] == pytest.approx(20 / 18) and own["l2_ratio"] == pytest.approx(1.1)
    assert rs[0]["l1_ratio"] == pytest.approx(1.0) and rs[0]["gbps"] == pytest.approx(50.0)
    # at one clock: the host run clocked 10 % higher, so its 10 % longer L2 mainloops are 21 % more cycles
    assert own["l2_ratio_at_clock"] == pytest.approx(1.1 * 1.1) and rs[0]["l2_ratio_at_clock"] == pytest.approx(1.0)


def test_a_failed_check_is_left_out():
    recs = [_rec("host", "own", 2, 20.0, 44.0, window=200.0, ok=False), _rec("local", "own", 2, 18.0, 40.0)]
    assert mb.rows(recs, 50.0) == []


def test_a_hinted_kernel_is_its_own_config():
    plain = [_rec("host", "own", 2, 20.0, 44.0, window=200.0), _rec("local", "own", 2, 18.0, 40.0)]
    hinted = [_rec("host", "own", 2, 20.0, 41.0, window=200.0), _rec("local", "own", 2, 18.0, 40.0)]
    for r in hinted:
        r["params"]["combine_hint"] = "cs"
    rs = mb.rows(plain + hinted, 50.0)      # the hinted pair, recorded last, replaces nothing
    assert [(r["config"], r["l2_ratio"]) for r in rs] == [("c", pytest.approx(1.1)), ("c@cs", pytest.approx(1.025))]


def test_no_usable_records_is_one_line_and_exit_2(tmp_path, capsys):
    f = tmp_path / "b.jsonl"
    f.write_text(json.dumps(_rec("local", "own", 2, 18.0, 40.0)) + "\n")
    assert mb.main([str(f)]) == 2
    assert mb.main([str(tmp_path / "missing.jsonl")]) == 2
    assert mb.main(["--platform", "no-such-platform", str(f)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("moe_beside:") for line in err)
