"""The beside-stores microbenchmark: its tables (every L2 tile once, the pattern's L1 tiles) on the CPU,
and its runner under Triton's interpreter (each point checked against the torch reference, then
recorded). The mainloop times themselves are GPU-only (docs/moe.md, "GEMM tiles beside host stores")."""

import json
import os

os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from helpers_ranks import WallEvent  # noqa: E402
from hwkernels import moe, moe_beside, moe_bench, moe_catalog  # noqa: E402
from xsim.moe.layout import expert_layout  # noqa: E402
from xsim.moe.routing import route  # noqa: E402
from xsim.moe.schedule import schedule_table  # noqa: E402
from xsim.moe.shapes import MoEShape  # noqa: E402

SHAPE = MoEShape(hidden=64, intermediate=64, experts=4, topk=2, tokens=24, block_m=16, block_n1=32, block_n2=32)


@pytest.fixture
def base():
    lay = expert_layout(SHAPE, route(SHAPE, "zipf", 1.2, 0))
    return schedule_table(SHAPE, lay, "wave", n_streams=4), lay


def _l2_once(table, base_table):
    l2 = table.tiles[table.tiles[:, 0] == 1]
    want = base_table.tiles[base_table.tiles[:, 0] == 1]
    return sorted(map(tuple, l2)) == sorted(map(tuple, want))


@pytest.mark.parametrize("k", [0, 1, 3])
def test_own_puts_k_l1_tiles_after_every_l2_tile(base, k):
    b, _ = base
    t = moe_beside.beside_table(b, "own", k, 4, 2.0)
    assert _l2_once(t, b)
    for s in range(t.n_streams):
        kinds = t.stream(s)[:, 0]
        assert np.array_equal(kinds, np.tile([1] + [0] * k, len(kinds) // (k + 1)))


def test_beside_splits_storers_from_gemm_programs(base):
    b, _ = base
    t = moe_beside.beside_table(b, "beside", 1, 4, 2.0)
    assert _l2_once(t, b)
    assert set(t.stream(0)[:, 0]) == {1}
    n_l2 = len(t.stream(0))
    for s in (1, 2, 3):   # the GEMM-only programs run about as long as the storer: ratio x its L2 tiles
        assert set(t.stream(s)[:, 0]) == {0} and len(t.stream(s)) == 2 * n_l2


@pytest.mark.parametrize("pattern, k, msg", [("own", -1, "k >= 0"), ("beside", 0, "1 <= storers"),
                                             ("beside", 4, "1 <= storers"), ("zigzag", 1, "pattern")])
def test_bad_patterns_raise(base, pattern, k, msg):
    with pytest.raises(ValueError, match=msg):
        moe_beside.beside_table(base[0], pattern, k, 4, 2.0)


def test_store_bytes_counts_valid_rows(base):
    b, lay = base
    t = moe_beside.beside_table(b, "own", 1, 4, 2.0)
    # every routed row lands once per L2 n-block: rows x hidden x 2 bytes
    assert moe_beside.store_bytes(t, lay, SHAPE) == len(lay.row_token) * SHAPE.hidden * 2


def test_flop_ratio_of_a_catalog_layer():
    s = MoEShape(hidden=1408, intermediate=5632, experts=16, topk=2, tokens=4096)
    assert moe_beside.flop_ratio(s) == pytest.approx(2.0)


@pytest.mark.parametrize("routing, skew, hint", [("zipf", 1.2, ""), ("blocked", 0.0, "cs"),
                                               ("zipf", 1.2, "evict_first")])
def test_every_point_is_checked_and_recorded(tmp_path, monkeypatch, routing, skew, hint):
    monkeypatch.setattr(torch.cuda, "Event", WallEvent)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda n: None)
    monkeypatch.setattr(moe_bench, "SETTINGS", {"bf16": moe.KernelConfig(block_k=32)})
    cfg = moe_catalog.Config(f"tiny-bf16-{routing}", SHAPE, routing, skew, 0)
    out = tmp_path / "b.jsonl"
    args = moe_beside.parse_args(["--out", str(out), "--own", "0,2", "--storers", "1,9",
                                  "--dests", "local", "--repeats", "1", "--combine-hint", hint])
    plat = {"gpu": "cpu", "gpu_count": 1, "sms": 4, "driver": "none"}
    rows = moe_beside.run_config(cfg, args, "test", None, plat, torch.device("cpu"), 4)
    # storers 9 >= the 4 programs: skipped
    assert [(r[1], r[2], r[3], r[4]) for r in rows] == [("own", 0, "local", True), ("own", 2, "local", True),
                                                        ("beside", 1, "local", True)]
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["kind"] for r in recs] == ["beside"] * 3 and all(r["check"]["ok"] for r in recs)
    assert [r["params"]["pattern"] for r in recs] == ["own", "own", "beside"]
    assert recs[0]["params"]["l1_per_l2"] == 0 and recs[2]["params"]["storers"] == 1
    assert "l1_mainloop_us" not in recs[0]["stats"] and "l1_mainloop_us" in recs[1]["stats"]
    assert all(r["params"]["l2_bytes"] == recs[0]["params"]["l2_bytes"] > 0 for r in recs)
    assert all(r["params"].get("combine_hint", "") == hint for r in recs)   # only a hinted run names one


def test_traces_keep_each_point_s_stamps_table_and_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "Event", WallEvent)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda n: None)
    monkeypatch.setattr(moe_bench, "SETTINGS", {"bf16": moe.KernelConfig(block_k=32)})
    cfg = moe_catalog.Config("tiny-bf16-zipf", SHAPE, "zipf", 1.2, 0)
    path = tmp_path / "t.npz"
    args = moe_beside.parse_args(["--out", str(tmp_path / "b.jsonl"), "--own", "2", "--storers", "1",
                                  "--dests", "local", "--repeats", "1", "--traces", str(path)])
    plat = {"gpu": "cpu", "gpu_count": 1, "sms": 4, "driver": "none"}
    traces = {}
    moe_beside.run_config(cfg, args, "test", None, plat, torch.device("cpu"), 4, traces)
    moe_beside.save_traces(path, traces, "abc1234")
    got = np.load(path)
    assert str(got["commit"]) == "abc1234"
    recs = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    for key, rec in zip(("tiny-bf16-zipf|own-2", "tiny-bf16-zipf|beside-1"), recs):
        tiles, st, nbytes = got[f"{key}|tiles"], got[f"{key}|local|stamps"], got[f"{key}|store_bytes"]
        assert st.shape == (len(tiles), 6) and len(got[f"{key}|offsets"]) == 5
        assert int(nbytes.sum()) == rec["params"]["l2_bytes"] and not nbytes[tiles[:, 0] == 0].any()
    with pytest.raises(SystemExit) as e:                   # an existing file is never overwritten
        moe_beside.parse_args(["--out", "x.jsonl", "--traces", str(path)])
    assert e.value.code == 2


@pytest.mark.parametrize("argv, msg", [(["--own", "a"], "--own"), (["--dests", "peer"], "--dests"),
                                       (["--repeats", "0"], "--repeats"), (["--storers", "0"], "--storers"),
                                       (["--configs", ""], "names no layer"),
                                       (["--configs", "no-such-layer"], "unknown config 'no-such-layer'"),
                                       (["--configs", "missing.toml"], "--configs"),
                                       (["--combine-hint", "wt"], "--combine-hint")])
def test_bad_options_are_one_line_exit_2(argv, msg, capsys):
    with pytest.raises(SystemExit) as e:
        moe_beside.parse_args(["--out", "x.jsonl", *argv])
    assert e.value.code == 2 and msg in capsys.readouterr().err


def test_the_device_script_names_only_catalog_configs():
    """hwkernels/run_moe_beside_device.sh spends device time: every config it names must load."""
    import re
    from pathlib import Path

    text = (Path(moe_beside.__file__).parent / "run_moe_beside_device.sh").read_text()
    names = [n for part in re.findall(r"configs=(?:\$configs,)?([\w.,-]+)", text) for n in part.split(",") if n]
    assert len(names) == 7       # five on an H200, two on an H100
    assert [c.name for c in moe_catalog.load_configs(",".join(names))] == names
    probes = re.findall(r"probes=([\w.,-]+)", text)[0].split(",")
    assert [c.name for c in moe_beside.configs_named(probes)] == probes and all(p.startswith("probe-") for p in probes)
    traced = re.findall(r"for c in ([\w. -]+);", text)[0].split()
    assert [c.name for c in moe_beside.configs_named(traced)] == traced
    fused = [n for part in re.findall(r"\bc=(?:\$c,)?([\w.,-]+)", text) for n in part.split(",") if n]
    fused_beside = re.findall(r"--configs (moe1-[\w.,-]+)", text)[0].split(",")
    hints = text[text.index('= hints ]'):].split("\nfi\n")[0]
    assert len(fused) == 18 and "--configs" not in hints      # fused-traces (and rest); hints runs the whole catalog
    assert len(fused_beside) == 3 and set(fused_beside) <= set(fused[:6])
    assert [c.name for c in moe_catalog.load_configs(",".join(fused))] == fused
    assert sorted(fused) == sorted(moe_catalog.catalog())   # the six, then the rest: the whole catalog once
    loaded = moe_catalog.load_configs(str(moe_beside.PROBES))
    assert len(loaded) == 13 and not {c.name for c in loaded} & set(moe_catalog.catalog())


def test_configs_named_finds_catalog_layers_and_probes():
    got = moe_beside.configs_named(["probe-dit-fp8", "moe1-dit-moe-bf16-zipf-4096"])
    assert [c.name for c in got] == ["probe-dit-fp8", "moe1-dit-moe-bf16-zipf-4096"]
    assert got[0].shape.precision == "fp8" and got[0].shape.intermediate == got[1].shape.intermediate == 5632
    with pytest.raises(ValueError, match="unknown config 'no-such-layer'"):
        moe_beside.configs_named(["no-such-layer"])
