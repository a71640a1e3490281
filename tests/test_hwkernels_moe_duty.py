"""The MoE duty-cycle probe under Triton's interpreter: every point checked, then recorded with its gap.

CUDA events are the wall clock and the spin gap is recorded instead of run; what is tested is the
probe's control flow (anchor first, each gap's launches, the check after every run, the record fields)
and its option errors. The clock law itself is GPU-only (docs/moe.md)."""

import json
import os

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from helpers_ranks import WallEvent  # noqa: E402
from hwkernels import fa_duty, moe, moe_bench, moe_catalog, moe_duty  # noqa: E402
from xsim.moe.shapes import MoEShape  # noqa: E402


@pytest.fixture
def tiny(monkeypatch):
    shape = MoEShape(hidden=64, intermediate=64, experts=4, topk=2, tokens=24,
                     block_m=16, block_n1=32, block_n2=32)
    cfg = moe_catalog.Config("tiny-bf16-zipf", shape, "zipf", 1.2, 0)
    spins = []
    monkeypatch.setattr(torch.cuda, "Event", WallEvent)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda n: None)
    monkeypatch.setattr(moe_bench, "SETTINGS", {"bf16": moe.KernelConfig(block_k=32)})
    monkeypatch.setattr(fa_duty, "spin", lambda ns: spins.append(ns))
    return cfg, spins


def test_every_gap_is_checked_and_recorded_anchor_first(tiny, tmp_path):
    cfg, spins = tiny
    out = tmp_path / "d.jsonl"
    args = moe_duty.parse_args(["--out", str(out), "--gaps", "0,1", "--repeats", "1",
                                "--heat-s", "0", "--run-s", "1e-9"])
    plat = {"gpu": "cpu", "gpu_count": 1, "sms": 1, "driver": "none"}
    rows = moe_duty.run_config(cfg, args, "test", None, None, torch.device("cpu"), 1, plat)
    assert [(r[1], r[2], r[3]) for r in rows] == [("wave", 0.0, True), ("wave", 1.0, True),
                                                  ("interleaved", 0.0, True), ("interleaved", 1.0, True)]
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["kind"] for r in recs] == ["duty"] * 4 and all(r["check"]["ok"] for r in recs)
    assert [r["params"]["gap_kind"] for r in recs] == ["none", "idle", "none", "idle"]
    assert all(r["params"]["destination"] == "local" and r["params"]["timing"] == "steady" for r in recs)
    assert all(set(r["stats"]) >= {"period_us", "busy_fraction", "program_us"} for r in recs)
    assert 0 in spins and any(s > 0 for s in spins)          # the anchor spins for 0 ns, a gap for more


def test_a_wrong_result_records_no_stats(tiny, tmp_path, monkeypatch):
    cfg, _ = tiny
    monkeypatch.setattr(moe_duty.Loop, "timed", lambda self, n, g, smi: (self.fused.out.fill_(0.0), {})[1])
    out = tmp_path / "d.jsonl"
    args = moe_duty.parse_args(["--out", str(out), "--gaps", "0", "--repeats", "1", "--schedules", "wave"])
    rows = moe_duty.run_config(cfg, args, "test", None, None, torch.device("cpu"), 1, {})
    assert rows[0][3] is False
    rec = json.loads(out.read_text())
    assert rec["check"]["ok"] is False and not rec["stats"]


@pytest.mark.parametrize("argv, msg", [(["--gaps", "a"], "--gaps"), (["--gaps", "-1"], "--gaps must be"),
                                       (["--schedules", "zigzag"], "--schedules"), (["--repeats", "0"], "--repeats")])
def test_bad_options_are_one_line_exit_2(argv, msg, capsys):
    with pytest.raises(SystemExit) as e:
        moe_duty.parse_args(["--out", "x.jsonl", *argv])
    assert e.value.code == 2 and msg in capsys.readouterr().err
