"""FA + A2A kernels under Triton's CPU interpreter on tiny shapes, against torch SDPA (float32),
receiver-side layout included; shape errors; the pure helpers of the runner."""

import json

import numpy as np
import pytest

from interpreter import run_interpreted


# Every variant on tiny shapes; one JSON line per case: (name, ok, max_abs_err).
CODE = r"""
import json, torch
from hwkernels import fa
CASES = [  # batch, heads, seq_len, head_dim, sp, rank, block_m, block_n, programs, tma
    (1, 4, 64, 64, 2, 1, 16, 16, 3, False),
    (2, 8, 64, 128, 4, 2, 16, 32, 2, False),
    (1, 2, 32, 64, 2, 0, 16, 16, 1, True),
]

def cpu_memcpy2d(dst, dpitch, src, spitch, width, rows):
    # The copy engine's 2-D copy, on CPU memory addressed by data_ptr (test only).
    import ctypes
    for r in range(rows):
        ctypes.memmove(dst + r * dpitch, src + r * spitch, width)

for (b, h, m, d, sp, rank, bm, bn, progs, tma) in CASES:
    shape = fa.FAShape(batch=b, heads=h, seq_len=m, head_dim=d, sp=sp, rank=rank,
                       block_m=bm, block_n=bn)
    q, k, v = fa.generate_input(shape, seed=1, device="cpu")
    ref = fa.reference(q, k, v)
    out = torch.empty(shape.qkv_shape, dtype=torch.bfloat16)
    bufs = fa.OwnerBuffers.allocate(shape, torch.empty((sp - 1) * shape.slice_elems,
                                                      dtype=torch.bfloat16))
    flags = torch.zeros(progs, dtype=torch.int32)
    kw = dict(programs=progs, num_warps=1, tma=tma)
    tag = f"b{b}h{h}m{m}d{d}sp{sp}r{rank}"
    def emit(name, res):
        print(json.dumps([f"{tag}:{name}", bool(res[0]), float(res[1])]))
    fa.poison(out)
    fa.launch_fa(q, k, v, shape, fa.MODE_LOCAL, out=out, **kw)
    emit("fa-only", fa.check_local(out, ref))
    for name, mode, fence in (("fused", fa.MODE_FUSED, "atomic"), ("cc-atomic", fa.MODE_CC, "atomic")):
        fa.poison(bufs.local, bufs.remote)
        flags.zero_()
        fa.launch_fa(q, k, v, shape, mode, bufs=bufs, flags=flags, fence=fence, **kw)
        emit(name, fa.check_owners(ref, bufs, shape))
        if mode == fa.MODE_CC:  # one release per tile, counted per program
            print(json.dumps([f"{tag}:flags", int(flags.sum()) == shape.n_tiles, 0.0]))
    stage = torch.empty(progs * bm * d, dtype=torch.bfloat16)
    for pace, spread, order, branch in ((2, True, "remote-first", True), (8, False, "default", False)):
        if bm % pace:
            continue
        fa.poison(bufs.local, bufs.remote)
        fa.launch_fa(q, k, v, shape, fa.MODE_PACED, bufs=bufs, pace=pace, spread=spread,
                     stage=stage, order=order, branch=branch, **kw)
        emit(f"fused-paced-{pace}", fa.check_owners(ref, bufs, shape))
    # The software-pipelined Q-loop (swp) on every kernel variant, paced with chunks that fall
    # on the last KV step too (pace 8 over M/b_n = 2..4 steps: stride 1).
    fa.poison(out)
    fa.launch_fa(q, k, v, shape, fa.MODE_LOCAL, out=out, swp=True, **kw)
    emit("swp-fa-only", fa.check_local(out, ref))
    for name, mode, extra in (("swp-fused", fa.MODE_FUSED, {}), ("swp-cc-atomic", fa.MODE_CC, {}),
                              ("swp-fused-paced", fa.MODE_PACED,
                               dict(pace=8 if bm % 8 == 0 else 2, stage=stage,
                                    order="remote-first"))):
        fa.poison(bufs.local, bufs.remote)
        fa.launch_fa(q, k, v, shape, mode, bufs=bufs, flags=flags, swp=True, **extra, **kw)
        emit(name, fa.check_owners(ref, bufs, shape))
    # The row sums as P @ ones (lsum) on FA-only and the paced kernel.
    fa.poison(out)
    fa.launch_fa(q, k, v, shape, fa.MODE_LOCAL, out=out, lsum=True, **kw)
    emit("lsum-fa-only", fa.check_local(out, ref))
    fa.poison(bufs.local, bufs.remote)
    fa.launch_fa(q, k, v, shape, fa.MODE_PACED, bufs=bufs, pace=2, stage=stage,
                 order="remote-first", lsum=True, **kw)
    emit("lsum-fused-paced", fa.check_owners(ref, bufs, shape))
    fa.poison(bufs.local, bufs.remote)
    fa.launch_a2a_store(out, bufs, shape, programs=progs, num_warps=1)    # serial: FA then A2A
    emit("serial", fa.check_owners(ref, bufs, shape))
    fa.poison(bufs.local, bufs.remote)
    n = fa.a2a_copy_engine(ref.to(torch.bfloat16).contiguous(), bufs, shape, cpu_memcpy2d)
    emit("a2a-ce", fa.check_owners(ref, bufs, shape))
    # The check must see a slice that never arrived.
    bufs.remote[0].view(torch.int16)[0, 0, rank * (h // sp)] = -1
    res = fa.check_owners(ref, bufs, shape)
    emit("unwritten-row-detected", (not res[0], 0.0))
"""


@pytest.fixture(scope="module")
def interpreted():
    return [json.loads(line) for line in run_interpreted(CODE) if line.startswith("[")]


def test_every_variant_matches_sdpa_on_the_receiver_side(interpreted):
    names = {n.split(":")[1] for n, _, _ in interpreted}
    assert names == {"fa-only", "fused", "cc-atomic", "flags", "serial", "a2a-ce",
                     "unwritten-row-detected", "fused-paced-2", "fused-paced-8", "swp-fa-only",
                     "swp-fused", "swp-cc-atomic", "swp-fused-paced", "lsum-fa-only",
                     "lsum-fused-paced"}
    assert len(interpreted) == 3 * 15
    bad = [(n, err) for n, ok, err in interpreted if not ok]
    assert not bad
    assert max(err for _, _, err in interpreted) < 2e-2


@pytest.mark.parametrize("kwargs,message", [
    (dict(heads=6, sp=4), r'"heads" \(6\) must be divisible by "sp" N \(4\)'),
    (dict(seq_len=66, sp=4), r'"seq_len" M \(66\) must be divisible by "sp" N \(4\)'),
    (dict(seq_len=64, sp=4, block_m=32), r'must be divisible by the tile "block_m" \(32\)'),
    (dict(head_dim=80), r'"head_dim" must be one of'),
    (dict(dtype="fp8"), r'"dtype" must be one of'),
    (dict(rank=4), r'"rank" must be in \[0, 4\)'),
    (dict(block_n=48), r'must be divisible by "block_n" \(48\)'),
])
def test_shape_errors_are_one_line(kwargs, message):
    from hwkernels.fa import FAShape

    args = dict(batch=1, heads=8, seq_len=64, head_dim=64, sp=4, block_m=16, block_n=16)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message) as info:
        FAShape(**args)
    assert "\n" not in str(info.value)


def test_paced_launch_rejects_bad_pace_or_missing_stage():
    pytest.importorskip("torch")
    from hwkernels import fa

    shape = fa.FAShape(batch=1, heads=4, seq_len=64, head_dim=64, sp=2, block_m=16, block_n=16)
    for kwargs, message in ((dict(pace=3), r'"pace" must be one of'),
                            (dict(pace=2), r'needs "stage"')):
        with pytest.raises(ValueError, match=message):
            fa.launch_fa(None, None, None, shape, fa.MODE_PACED, programs=2, **kwargs)


def test_pace_stride_spreads_chunks_over_the_q_loop():
    from hwkernels import fa

    shape = fa.FAShape(batch=1, heads=32, seq_len=8192, head_dim=128, sp=4)   # 64 KV steps
    assert fa.pace_stride(shape, 8, spread=True) == 8
    assert fa.pace_stride(shape, 16, spread=False) == 1
    short = fa.FAShape(batch=4, heads=32, seq_len=1024, head_dim=128, sp=4)   # 8 KV steps
    assert fa.pace_stride(short, 16, spread=True) == 1


def test_runner_bad_shape_exits_2(capsys):
    pytest.importorskip("torch")
    from hwkernels import fa_bench

    assert fa_bench.main(["--out", "/nonexistent/x.jsonl", "--heads", "30"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and '"heads" (30) must be divisible by "sp" N (4)' in err[0]


@pytest.mark.parametrize("argv,env,message", [
    (["--target", "peer"], {}, "--target peer needs at least 2 GPUs"),
    ([], {"WORLD_SIZE": "2"}, "--target host runs one process"),
    (["--target", "peer", "--heads", "6"], {"WORLD_SIZE": "4"}, '"heads" (6) must be divisible'),
    (["--target", "peer", "--seq-lens", "1028"], {"WORLD_SIZE": "8"},
     '"seq_len" M (1028) must be divisible by "sp" N (8)')])
def test_runner_targets_the_world_cannot_serve_exit_2(argv, env, message, capsys, monkeypatch):
    pytest.importorskip("torch")
    from hwkernels import fa_bench

    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert fa_bench.main(["--out", "/nonexistent/x.jsonl", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


@pytest.mark.parametrize("argv", [["--steady-s", "-1"], ["--steady-s", "0.25", "--paired"]])
def test_runner_steady_timing_needs_a_length_and_no_pairing(argv, capsys):
    pytest.importorskip("torch")
    from hwkernels import fa_bench

    assert fa_bench.main(["--out", "/nonexistent/x.jsonl", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--steady-s must be >= 0" in err[0]


def test_measure_heats_after_every_trial_poison_right_before_its_run():
    from hwkernels.harness import measure

    calls = []
    m = measure(lambda: calls.append("run") or {"t": 1.0}, repeats=2, warmup=1,
                poison=lambda: calls.append("poison"), heat=lambda: calls.append("heat"))
    assert m.ok and calls == ["poison", "heat", "run"] * 3   # no poison between the heat and the run


def test_tile_times_from_synthetic_stamps():
    from hwkernels.fa_variants import tile_times

    # 2 programs x 2 tiles, SM clock 2 GHz: tile start, Q-loop end, store end (ns, then clk).
    st = []
    for p, tiles in ((0, [(0, 10_000, 10_500), (10_500, 20_500, 21_000)]),
                     (1, [(0, 9_000, 9_250), (9_250, 19_250, 19_500)])):
        st.append([(a, b, c, 2 * a, 2 * b, 2 * c) for a, b, c in tiles])
    stamps = np.array([st[0][0], st[1][0], st[0][1], st[1][1]], dtype=np.int64)
    t = tile_times(stamps, programs=2)
    assert np.allclose(t["clock_mhz"], [2000, 2000])
    assert np.allclose(sorted(t["issue_span_us"]), [0.25, 0.25, 0.5, 0.5])
    assert np.allclose(sorted(t["qloop_us"]), [9.0, 10.0, 10.0, 10.0])
    assert np.allclose(sorted(t["gap_us"]), [10.0, 10.0])


def test_qloop_fit_recovers_slope_and_fixed_part():
    from hwkernels.fa_bench import fit_qloop

    pts = [(m, 1.5 + 2.0 * m / 128) for m in (1024, 4096, 16384)]
    sigma, fixed = fit_qloop(pts, 128)
    assert sigma == pytest.approx(2.0) and fixed == pytest.approx(1.5)
    assert fit_qloop(pts[:1], 128) is None


def test_ring_slots_keep_4x_l2_between_rewrites():
    from hwkernels.fa import FAShape
    from hwkernels.fa_bench import MAX_SLOTS, RING_BYTES, slots_for

    for m in (1024, 8192, 65536):
        s = FAShape(batch=max(1, 4096 // m), heads=32, seq_len=m, head_dim=128, sp=4)
        n = slots_for(s)
        assert n == MAX_SLOTS or n * s.out_bytes * 3 // 4 >= RING_BYTES
        assert (n - 1) * s.out_bytes * 3 // 4 < RING_BYTES or n == 1


def test_launch_table_names_the_runner():
    from hwkernels.launch import EXPERIMENTS

    assert EXPERIMENTS["fa-a2a"] == "hwkernels.fa_bench"


def test_tables_from_records_file(tmp_path):
    from hwkernels import records
    from hwkernels.fa_tables import rows_from_records, table, tile_table

    def stats(x):
        return {"mean": x, "median": x, "p10": x, "p90": x, "min": x, "max": x, "n": 1}
    path = tmp_path / "r.jsonl"
    times = {"fa-only": 100.0, "serial": 150.0, "fused": 110.0, "sdpa-cudnn": 90.0}
    for variant, t in times.items():
        st = {"kernel_us": stats(t)}
        if variant in ("fa-only", "fused"):
            st.update(qloop_us=stats(t / 4), issue_span_us=stats(1.0))
        rec = records.make_record("fa-a2a", variant, {"seq_len": 1024, "variant": variant}, st,
                                  {"ok": True, "max_abs_err": 0.0}, {"gpu": "x"}, "c", False)
        records.append_record(path, rec)
    bad = records.make_record("fa-a2a", "fused", {"seq_len": 2048, "variant": "fused"},
                              {"kernel_us": stats(1.0)}, {"ok": False}, {"gpu": "x"}, "c", False)
    records.append_record(path, bad)   # a failed check is never tabled
    rows, tiles = rows_from_records(path)
    assert [r["M"] for r in rows] == [1024] and rows[0]["t"] == times
    line = table(rows).splitlines()[1].split()
    assert line[0] == "1024" and line[8:12] == ["10.0", "0.800", "1.364", "0.900"]
    assert line[12:] == ["nan"] * 3      # no fused-paced record
    assert tiles[0][:3] == (1024, 25.0, 27.5)
    assert len(tile_table(tiles).splitlines()) == 2


@pytest.mark.gpu
@pytest.mark.parametrize("d,sp,rank,tma", [(128, 4, 2, True), (64, 2, 0, True), (128, 4, 0, False)])
def test_every_variant_on_the_gpu_receiver_side(d, sp, rank, tma):
    torch = pytest.importorskip("torch")
    from hwkernels.destination import host_buffer
    from hwkernels.fa import FAShape
    from hwkernels.fa_variants import VARIANTS, Case, KernelConfig

    shape = FAShape(batch=2, heads=8, seq_len=1024, head_dim=d, sp=sp, rank=rank)
    host = host_buffer(2 * shape.remote_bytes, torch.device("cuda", 0))
    case = Case(shape, KernelConfig(num_warps=8, num_stages=2, tma=tma), host.cuda, 2, 132)
    for variant in VARIANTS:
        case.poison(variant)
        for slot in range(case.slots):
            case.enqueue(variant, slot)
        torch.cuda.synchronize()
        ok, err = case.check(variant)
        assert ok, (variant, err)
