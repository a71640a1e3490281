"""The MoE runner end to end under Triton's interpreter: records for a tiny config.

The GPU-only pieces are replaced (CUDA events by a wall clock, mapped host memory by a CPU
tensor, one stream so the interpreter's sequential programs cannot wait on a later one);
what is tested is the runner's control flow: check before timing, record kinds and fields.
"""

import json
import os
import time

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from helpers_ranks import WallEvent  # noqa: E402
from hwkernels import moe, moe_bench, moe_catalog, moe_reference  # noqa: E402
from xsim.moe.shapes import MoEShape  # noqa: E402


@pytest.fixture
def cpu_runner(monkeypatch):
    shape = MoEShape(hidden=64, intermediate=64, experts=4, topk=2, tokens=24,
                     block_m=16, block_n1=32, block_n2=32)
    cfg = moe_catalog.Config("tiny-bf16-zipf", shape, "zipf", 1.2, 0)
    monkeypatch.setattr(moe_catalog, "catalog", lambda: {cfg.name: cfg})
    monkeypatch.setattr(torch.cuda, "Event", WallEvent)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda n: None)
    monkeypatch.setattr(moe_bench, "SETTINGS", {"bf16": moe.KernelConfig(block_k=32)})
    monkeypatch.setattr(moe.FusedMoE, "distinct_sms", lambda self: True)

    def init(self, args):
        self.args, self.device, self.sms = args, torch.device("cpu"), 1
        self._platform = {"gpu": "cpu", "gpu_count": 1, "sms": 1, "driver": "none"}
        self.commit, self.dirty, self.rows = "test", None, []
        self.settings, self.t0 = dict(moe_bench.SETTINGS), time.time()
        self.traces = {} if args.traces else None

    def host_out(shape, device):
        t = torch.empty(shape.tokens, shape.topk, shape.hidden, dtype=torch.bfloat16)
        return t, t, None

    monkeypatch.setattr(moe_bench.Bench, "__init__", init)
    monkeypatch.setattr(moe_bench, "host_out", host_out)
    return cfg


def test_runner_checks_then_records_every_kind(cpu_runner, tmp_path):
    out = tmp_path / "r.jsonl"
    rc = moe_bench.main(["--out", str(out), "--target", "host", "--trials", "2",
                         "--phases", "kernel,signal,gemm,mainloop", "--gemm-m", "32"])
    assert rc == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = [r["kind"] for r in recs]
    assert kinds.count("kernel") == 2 and kinds.count("signal") == 2
    assert kinds.count("gemm") == 2 and kinds.count("mainloop") == 2
    assert all(r["check"]["ok"] for r in recs)
    kern = [r for r in recs if r["kind"] == "kernel"]
    assert {r["params"]["schedule"] for r in kern} == {"wave", "interleaved"}
    assert kern[0]["params"]["config"] == cpu_runner.name
    assert set(kern[0]["stats"]) >= {"kernel_us", "span_us", "stall_us", "wait_us", "signal_us",
                                     "l1_mainloop_us", "l2_mainloop_us", "kernel_nostamp_us"}
    assert kern[0]["stats"]["kernel_us"]["n"] == 2            # warm-up run not kept
    gemm = [r for r in recs if r["kind"] == "gemm"]
    assert {r["params"]["path"] for r in gemm} == {"l1", "l2"}
    assert set(gemm[0]["stats"]) == {"triton_us", "cublas_us"}


def test_runner_refuses_targets_the_world_cannot_serve(monkeypatch, tmp_path, capsys):
    out = str(tmp_path / "r.jsonl")
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert moe_bench.main(["--out", out, "--target", "peer"]) == 2
    assert "--target peer needs at least 2 GPUs" in capsys.readouterr().err
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert moe_bench.main(["--out", out, "--target", "host"]) == 2
    assert "use --target peer for N > 1" in capsys.readouterr().err
    assert moe_bench.main(["--out", out, "--target", "peer", "--combine", "local"]) == 2
    assert not (tmp_path / "r.jsonl").exists()


def test_a_wrong_result_records_no_time(cpu_runner, tmp_path, monkeypatch):
    monkeypatch.setattr(moe_reference, "check", lambda out, ref, routed=None: (False, 9.0))
    out = tmp_path / "r.jsonl"
    assert moe_bench.main(["--out", str(out), "--trials", "2", "--phases", "kernel,signal"]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["kind"] for r in recs] == ["kernel", "kernel"]  # no signal run after a failure
    assert all(r["check"] == {"ok": False, "max_abs_err": 9.0} and r["stats"] == {} for r in recs)


def test_local_combine_records_the_fused_mainloops(cpu_runner, tmp_path, monkeypatch):
    def no_host(*_):
        raise AssertionError("the local-Combine control must not touch host memory")

    monkeypatch.setattr(moe_bench, "host_out", no_host)
    out = tmp_path / "r.jsonl"
    assert moe_bench.main(["--out", str(out), "--trials", "2", "--phases", "kernel,signal",
                           "--combine", "local"]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = [r["kind"] for r in recs]
    assert kinds.count("kernel_local") == 2 and "kernel" not in kinds and "signal" not in kinds
    loops = [r for r in recs if r["kind"] == "mainloop"]
    assert sorted((r["params"]["kind"], r["params"]["schedule"]) for r in loops) == [
        ("l1", "interleaved"), ("l1", "wave"), ("l2", "interleaved"), ("l2", "wave")]
    assert all(r["params"]["source"] == "fused-local" and r["check"]["ok"] for r in loops)
    l1 = next(r for r in loops if r["params"]["kind"] == "l1")
    l2 = next(r for r in loops if r["params"]["kind"] == "l2")
    assert set(l1["stats"]) == {"mainloop_us", "wait_us", "store_us", "signal_us", "epilogue_us", "gap_us",
                                "kernel_outside_us"}                      # once per kernel: in L1's
    assert set(l2["stats"]) == {"mainloop_us", "store_us", "dep_wait_us", "epilogue_us", "gap_us"}  # no fixed wait
    assert l1["params"]["k_dim"] == cpu_runner.shape.hidden
    assert l2["params"]["k_dim"] == cpu_runner.shape.intermediate
    assert all(r["params"]["destination"] == "local" for r in recs if r["kind"] == "kernel_local")


def test_settings_round_trip_through_tune_out(cpu_runner, tmp_path):
    path = tmp_path / "settings.json"
    out = tmp_path / "r.jsonl"
    assert moe_bench.main(["--out", str(out), "--phases", "", "--tune-out", str(path)]) == 0
    doc = json.loads(path.read_text())
    assert doc["bf16"]["block_k"] == 32
    doc["bf16"]["num_stages"] = 2
    path.write_text(json.dumps(doc))
    assert moe_bench.main(["--out", str(out), "--trials", "1", "--phases", "kernel",
                           "--settings", str(path)]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert recs and all(r["params"]["num_stages"] == 2 for r in recs)


def test_tune_starts_from_the_shipped_settings():
    from hwkernels.moe_bench_gemm import TUNE

    for prec, settings in moe_bench.SETTINGS.items():
        assert TUNE[prec][0] == settings
        assert all(kc.poll == 1 for kc in TUNE[prec])


def test_lead_option_runs_each_lead_and_records_it(cpu_runner, tmp_path):
    out = tmp_path / "r.jsonl"
    assert moe_bench.main(["--out", str(out), "--trials", "1", "--phases", "kernel",
                           "--lead", "default,1,2"]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    inter = [r["params"]["lead"] for r in recs if r["params"]["schedule"] == "interleaved"]
    assert sorted(inter) == sorted({float(x) for x in inter}) and {1.0, 2.0} <= set(inter)
    assert [r["params"]["schedule"] for r in recs].count("wave") == 1
    assert all(r["check"]["ok"] for r in recs)


def test_bad_lead_option_is_a_one_line_exit_2(cpu_runner, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    assert moe_bench.main(["--out", str(out), "--lead", "fast"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hwkernels.moe_bench: ") and err.count("\n") == 1 and '"lead"' in err
    assert not out.exists()


def test_steady_timing_heats_before_every_trial_and_says_so(cpu_runner, tmp_path, monkeypatch):
    launches = []
    real = moe.FusedMoE.launch
    monkeypatch.setattr(moe.FusedMoE, "launch", lambda self: (launches.append(1), real(self))[1])
    out = tmp_path / "r.jsonl"
    assert moe_bench.main(["--out", str(out), "--trials", "2", "--phases", "kernel", "--steady-s", "1e-9"]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["kind"] for r in recs] == ["kernel", "kernel"] and all(r["check"]["ok"] for r in recs)
    assert all(r["params"]["timing"] == "steady" and r["params"]["steady_s"] == 1e-9 for r in recs)
    # per schedule: each heater's compiling launch (2), one heat launch before each of the 3 stamped
    # trials (warm-up included) and one before the unstamped ones, and plain's check launch
    assert len(launches) == 2 * (2 + 3 + 1 + 1)


def test_traces_keep_each_kernel_point_s_stamps_and_table(cpu_runner, tmp_path, capsys):
    import numpy as np

    path = tmp_path / "t.npz"
    rc = moe_bench.main(["--out", str(tmp_path / "r.jsonl"), "--target", "host", "--trials", "1",
                         "--phases", "kernel", "--traces", str(path)])
    assert rc == 0
    with np.load(path) as z:
        keys = sorted(k.rsplit("|", 2)[0] for k in z.files if k.endswith("|host|stamps"))
        assert keys == [f"{cpu_runner.name}|int@1", f"{cpu_runner.name}|wave"]   # the table's label
        for key in keys:
            st, tiles = z[f"{key}|host|stamps"], z[f"{key}|tiles"]
            assert st.dtype == np.int32 and st.shape[0] == tiles.shape[0] and st[:, 0].min() == 0
            l2 = tiles[:, 0] == 1
            assert (z[f"{key}|store_bytes"][l2] > 0).all() and (z[f"{key}|store_bytes"][~l2] == 0).all()
        assert str(z["commit"]) == "test"
    with pytest.raises(SystemExit):                    # never over an existing file
        moe_bench.main(["--out", str(tmp_path / "r.jsonl"), "--traces", str(path)])
    assert "exists" in capsys.readouterr().err


@pytest.mark.parametrize("hint", ["cs", "evict_first"])
def test_a_hinted_combine_runs_checked_and_says_so_in_its_records(cpu_runner, tmp_path, hint):
    out = tmp_path / "r.jsonl"
    assert moe_bench.main(["--out", str(out), "--trials", "1", "--phases", "kernel", "--combine", "local",
                           "--combine-hint", hint]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert recs and all(r["check"]["ok"] and r["params"]["combine_hint"] == hint for r in recs)


def test_an_unknown_combine_hint_is_refused(cpu_runner, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        moe_bench.main(["--out", str(tmp_path / "r.jsonl"), "--combine-hint", "nt"])
    assert exc.value.code == 2 and "--combine-hint" in capsys.readouterr().err
