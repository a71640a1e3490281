"""benchmarks/moe_beside_law.py: the read law from read-beside cells, the busy share from q(t), the error
path without a law (no device)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import moe_beside_law as law  # noqa: E402


def _read(dest, gap_ns, reader_us, store_gbps, storers=33, fp=8.0):
    p = {"loads": "tma", "footprint_mb": fp, "storers": storers, "gap_us": 40.0, "destination": dest,
         "read_gap_ns": gap_ns, "shared": True, "passes": 2, "readers": 132 - storers}
    return {"kind": "read-beside", "params": p, "check": {"ok": True},
            "stats": {"reader_us": {"median": reader_us}, "store_gbps": {"median": store_gbps}}}


def test_the_law_is_a_line_through_each_reader_group_s_slope_at_its_rate():
    # at load 0.5: unpaced readers (16 MB in 100 us) keep 0.5 of their rate, a = 1; paced ones (in 200 us)
    # 0.8, a = 0.4; a group with fewer than 33 storers is left out
    recs = [_read("host", 0, 200.0, 25.0), _read("local", 0, 100.0, 25.0),
            _read("host", 900, 250.0, 25.0), _read("local", 900, 200.0, 25.0),
            _read("host", 0, 1000.0, 25.0, storers=16), _read("local", 0, 100.0, 25.0, storers=16)]
    c0, c1, pts = law.read_law(recs, 50.0)
    fast = 2 * 8 * 2**20 / 100 / 1e3
    assert [p[0] for p in pts] == pytest.approx([fast / 2, fast]) and [p[1] for p in pts] == pytest.approx([0.4, 1.0])
    assert law.slope_at((c0, c1), fast / 2) == pytest.approx(0.4) and law.slope_at((c0, c1), fast) == pytest.approx(1.0)
    assert law.slope_at((c0, c1), 10 * fast) == 1.0 and law.slope_at((c0, c1), 0.0) == 0.0     # clipped
    with pytest.raises(ValueError, match="fewer than two"):
        law.read_law(recs[:2], 50.0)


def test_busy_share_follows_q():
    trace = (np.array([0.0, 10.0, 20.0, 30.0]), np.array([0.0, 5.0, 0.0, 0.0]))     # draining from 0 to 20
    assert law.busy_share(trace, np.array([0.0, 10.0, 20.0]), np.array([20.0, 30.0, 30.0])) \
        == pytest.approx([1.0, 0.5, 0.0])


def test_no_law_is_one_line_and_exit_2(tmp_path, capsys):
    beside = tmp_path / "b.jsonl"
    rec = {"kind": "beside", "check": {"ok": True}, "stats": {},
           "params": {"config": "c", "pattern": "own", "l1_per_l2": 1, "storers": 132}}
    beside.write_text("".join(json.dumps(rec | {"params": rec["params"] | {"destination": d}}) + "\n"
                              for d in ("host", "local")))
    reads = tmp_path / "r.jsonl"
    reads.write_text("".join(json.dumps(r) + "\n" for r in (_read("host", 0, 200.0, 25.0), _read("local", 0, 100.0, 25.0))))
    assert law.main(["--reads", str(reads), str(beside)]) == 2
    assert law.main(["--reads", str(tmp_path / "missing.jsonl"), str(beside)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("moe_beside_law:") for line in err)
