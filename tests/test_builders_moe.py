"""The moe builder through the CLI: both schedules, eq. 14, and one-line errors (exit 2)."""

import json

import pytest

from xsim.cli import main

SMALL = ["--set", "tokens=256", "--set", "hidden=512", "--set", "intermediate=256", "--set", "experts=8",
         "--set", "topk=2", "--set", "n_streams=16"]


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_simulate_both_schedules_json(capsys):
    code, out, _ = run(capsys, "simulate", "moe1-qwen3-30b-bf16-zipf-4096", *SMALL, "--engine", "fast",
                       "--platform", "paper-8gpu", "--json")
    assert code == 0
    doc = json.loads(out)
    for schedule in ("wave", "interleaved"):
        assert doc[schedule]["kernel_us"] > 0
        assert set(doc[schedule]["span_us"]) >= {"median", "p10", "p90", "n"}
    assert doc["speedup"] == pytest.approx(doc["wave"]["kernel_us"] / doc["interleaved"]["kernel_us"])
    assert doc["wave"]["remote_bytes"] == doc["interleaved"]["remote_bytes"] == 256 * 2 * 512 * 2
    assert doc["compute_model"] == {"l1": "roofline", "l2": "roofline"}
    assert isinstance(doc["closed_form"]["eq14_int_ok"], bool)


def test_simulate_one_schedule_table(capsys):
    code, out, _ = run(capsys, "simulate", "moe1-qwen3-30b-bf16-zipf-4096", *SMALL, "--set", "schedule=wave",
                       "--engine", "fast", "--platform", "paper-8gpu")
    assert code == 0 and "span_us" in out and "kernel_us" in out


@pytest.mark.parametrize("sets, message", [
    (["experts=10", "ep=4"], '"experts" (10) must be divisible by "ep" (4)'),
    (["topk=9"], '"topk" (9) must be <= "experts" (8)'),
    (["block_n1=96"], '"block_n1" (96) must divide "intermediate" (256)'),
    (["block_n2=384"], '"block_n2" (384) must divide "hidden" (512)'),
    (["lead=0", "schedule=interleaved"], "dependency cycle"),
])
def test_impossible_configs_are_one_line_errors(capsys, sets, message):
    extra = [x for s in sets for x in ("--set", s)]
    code, _, err = run(capsys, "simulate", "moe1-qwen3-30b-bf16-zipf-4096", *SMALL, *extra, "--engine", "fast",
                       "--platform", "paper-8gpu")
    assert code == 2
    assert err.count("\n") == 1 and message in err


def test_a_tile_table_unsafe_for_co_resident_streams_is_an_error(capsys, tmp_path):
    import numpy as np

    from xsim.moe.tiles import L1, L2

    # one expert, 2 m-blocks (tokens 128, topk 1, block_m 64), 1 L1 and 1 L2 n-block each; stream 0
    # waits on m-block 0 before its L1 of m-block 1, stream 1 on m-block 1 before its L1 of m-block 0
    tiles = np.array([[L2, 0, 0, 0], [L1, 0, 1, 0], [L2, 0, 1, 0], [L1, 0, 0, 0]], dtype=np.int32)
    path = tmp_path / "table.npz"
    np.savez(path, offsets=np.array([0, 2, 4], np.int32), tiles=tiles)
    sets = ["tokens=128", "experts=1", "topk=1", "hidden=128", "intermediate=128", "block_m=64",
            "n_streams=2", "schedule=wave", f"tile_table={path}"]
    code, _, err = run(capsys, "simulate", "moe1-qwen3-30b-bf16-zipf-4096", *[x for s in sets for x in ("--set", s)],
                       "--engine", "fast", "--platform", "paper-8gpu")
    assert code == 2 and err.count("\n") == 1 and "not safe for co-resident streams" in err


def test_the_measured_spread_is_the_default_and_zero_turns_it_off(capsys):
    base = ["simulate", "moe1-qwen3-30b-bf16-zipf-4096", *SMALL, "--set", "schedule=wave", "--engine", "fast",
            "--platform", "h200-pcie-host", "--json"]
    code, out, _ = run(capsys, *base)
    spread = json.loads(out)
    assert code == 0 and spread["mainloop_cv"]["l1"] > 0 and spread["mainloop_cv"]["l2"] > 0   # shipped records
    code, out, _ = run(capsys, *base, "--set", "mainloop_cv=0")
    alike = json.loads(out)
    assert code == 0 and alike["mainloop_cv"] == {"l1": 0.0, "l2": 0.0}
    assert alike["kernel_us"] != spread["kernel_us"]
    code, out, _ = run(capsys, *base, "--set", "spread_seed=1")
    assert code == 0 and json.loads(out)["kernel_us"] != spread["kernel_us"]


def test_spread_seeds_average_the_kernel_time_over_seeds(capsys):
    base = ["simulate", "moe1-qwen3-30b-bf16-zipf-4096", *SMALL, "--set", "schedule=wave", "--engine", "fast",
            "--platform", "h200-pcie-host", "--json"]
    times = []
    for seed in (0, 1, 2):
        code, out, _ = run(capsys, *base, "--set", f"spread_seed={seed}")
        assert code == 0
        times.append(json.loads(out)["kernel_us"])
    code, out, _ = run(capsys, *base, "--set", "spread_seeds=3")
    doc = json.loads(out)
    assert code == 0 and doc["kernel_us_per_seed"] == pytest.approx(times)
    assert doc["kernel_us"] == pytest.approx(sum(times) / 3)
    code, out, _ = run(capsys, *base)
    assert "kernel_us_per_seed" not in json.loads(out)              # one seed: the summary as before
    code, _, err = run(capsys, *base, "--set", "spread_seeds=0")
    assert code == 2 and err.count("\n") == 1


def test_both_schedules_share_each_seeds_config_and_match_one_schedule_runs(capsys, monkeypatch):
    """Under compute = contention a Config runs every schedule's table in its pre-pass: the schedules of
    one seed share it (one Config per seed), and each schedule's seeds are what a run of it alone gives."""
    from xsim.builders import moe as builder

    made = []
    real = builder.Config.__init__
    monkeypatch.setattr(builder.Config, "__init__", lambda self, *a, **k: (made.append(1), real(self, *a, **k))[1])
    base = ["simulate", "moe1-qwen3-30b-fp8-balanced-4096", "--engine", "fast", "--platform", "h200-pcie-host",
            "--set", "compute=contention", "--set", "spread_seeds=3", "--json"]   # the pre-pass needs a measured shape
    code, out, _ = run(capsys, *base, "--set", "schedule=both")
    assert code == 0
    both, made_both = json.loads(out), len(made)
    for schedule in ("wave", "interleaved"):
        made.clear()
        code, out, _ = run(capsys, *base, "--set", f"schedule={schedule}")
        assert code == 0 and len(made) == made_both      # two schedules make no more Configs than one
        assert both[schedule]["kernel_us_per_seed"] == json.loads(out)["kernel_us_per_seed"]


def test_mainloop_pool_schedule_gives_each_schedule_its_measured_mainloops(capsys):
    base = ["simulate", "moe1-qwen3.5-bf16-zipf-1024", "--engine", "fast", "--platform", "h200-pcie-host", "--json",
            "--set", "mainloop_cv=0"]
    outs = {}
    for pool in ("layer", "schedule"):
        code, out, _ = run(capsys, *base, "--set", f"mainloop_pool={pool}")
        assert code == 0
        outs[pool] = json.loads(out)
    assert outs["layer"]["compute_model"] == {"l1": "layer", "l2": "layer"}
    # the shipped fused-local records: qwen3.5's wave L1 mainloops are ~19 % longer than the interleaved ones
    assert outs["schedule"]["wave"]["kernel_us"] > outs["layer"]["wave"]["kernel_us"]
    assert outs["schedule"]["speedup"] > outs["layer"]["speedup"]


def test_combine_rate_scale_slows_a_link_bound_kernel(capsys):
    base = ["simulate", "moe1-qwen3-30b-fp8-balanced-4096", "--set", "tokens=1024", "--engine", "fast",
            "--platform", "h200-pcie-host", "--json", "--set", "schedule=interleaved"]
    code, out, _ = run(capsys, *base)
    shipped = json.loads(out)
    code2, out2, _ = run(capsys, *base, "--set", "combine_rate_scale=0.5")
    half = json.loads(out2)
    assert code == code2 == 0
    # link-bound: the Combine's bytes over half the rate take nearly twice as long
    assert half["kernel_us"] > 1.6 * shipped["kernel_us"]
    assert half["closed_form"]["drain_rate_gbps"] == pytest.approx(shipped["closed_form"]["drain_rate_gbps"] / 2)
