"""benchmarks/moe_beside_des.py: the DES on a beside table (the gate's wait is in a tile's mainloop, the
local control has none) and the script's error paths (no device)."""

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import moe_beside_des as mbd  # noqa: E402

from hwkernels.moe_beside import beside_table, flop_ratio  # noqa: E402
from xsim.builders.moe import without_link  # noqa: E402
from xsim.load_gate import LoadGate  # noqa: E402
from xsim.moe.layout import expert_layout  # noqa: E402
from xsim.moe.routing import route  # noqa: E402
from xsim.moe.schedule import schedule_table  # noqa: E402
from xsim.moe.shapes import MoEShape  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402

SHAPE = MoEShape(hidden=256, intermediate=256, experts=4, topk=2, tokens=256, block_m=64, block_n1=64, block_n2=64)
LOCAL = {"l1": 10.0, "l2": 8.0, "l1_epilogue": 0.5, "l2_epilogue": 0.2}
NO_SPREAD = {"l1": 0.0, "l2": 0.0}


@pytest.fixture
def table_and_layout():
    lay = expert_layout(SHAPE, route(SHAPE, "balanced", 0.0, 0))
    base = schedule_table(SHAPE, lay, "wave", n_streams=8)
    return beside_table(base, "own", 0, 8, flop_ratio(SHAPE)), lay


def test_the_local_control_runs_the_given_mainloops(table_and_layout):
    table, lay = table_and_layout
    got = mbd.simulated_mainloops(table, SHAPE, lay, without_link(resolve_platform("h200-pcie-host")), LOCAL,
                                  NO_SPREAD, 0)
    assert got["l2"] == pytest.approx(LOCAL["l2"]) and got["l1"] != got["l1"]   # own 0: no L1 tile (NaN)


def test_a_closed_gate_puts_the_drain_into_the_mainloops(table_and_layout):
    table, lay = table_and_layout
    platform = replace(resolve_platform("h200-pcie-host"), load_gate=LoadGate(0.0, "producer"))
    got = mbd.simulated_mainloops(table, SHAPE, lay, platform, LOCAL, NO_SPREAD, 0)
    # every L2 tile after the first on a program waits for its own Combine bytes to drain first
    assert got["l2"] > LOCAL["l2"]


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    f = tmp_path / "b.jsonl"
    f.write_text(json.dumps({"kind": "beside", "params": {"config": "c", "pattern": "own", "l1_per_l2": 1,
                                                          "destination": "host"}, "check": {"ok": True}}) + "\n")
    assert mbd.main([str(f)]) == 2                                  # no local pair
    assert mbd.main([str(tmp_path / "missing.jsonl")]) == 2
    assert mbd.main(["--seeds", "0", str(f)]) == 2
    assert mbd.main(["--platform", "no-such-platform", str(f)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and all(line.startswith("moe_beside_des:") for line in err)


def test_below_saturation_averages_only_the_loads_in_range():
    from types import SimpleNamespace

    def r(pattern, load, measured, start):
        return {"config": "x", "pattern": pattern, "k": 1, "load": load, "l2_local_us": 50.0,
                "l2_excess_measured": measured, "l2_excess_start": start}
    rs = [r("own", 0.10, 99.0, 0.0), r("own", 0.30, 10.0, 1.0), r("own", 0.50, 20.0, 3.0),
          r("own", 0.90, 99.0, 40.0), r("beside", 0.95, 30.0, 28.0)]
    lines = mbd.below_saturation(rs, {"x": SimpleNamespace(shape=SHAPE)})
    assert lines[-1] == "| x | 256 | 256 | 4 | 2 | 128 | bf16 | 50.0 | 15.0 / 2.0 (2; 0.30-0.50) | - |"
