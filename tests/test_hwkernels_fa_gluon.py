"""The Gluon attention forward (hwkernels.fa_gluon): compiled for sm_90 on the CPU (registers,
spills, the softmax under P V in the SASS), and on a GPU (marked gpu) against torch SDPA."""

import pytest

from hwkernels import fa_gluon_launch, fa_gluon_sass


@pytest.fixture(scope="module")
def sass():
    pytest.importorskip("triton.experimental.gluon")
    try:
        return {ov: fa_gluon_sass.inspect(fa_gluon_sass.compile_offline(stages=3, overlap=ov))
                for ov in (0, 2)}
    except Exception as exc:  # noqa: BLE001 - no ptxas / no CUDA backend here
        pytest.skip(f"cannot compile Gluon for sm_90 here: {exc}")


def test_compiles_without_spills_in_shared_memory(sass):
    for info in sass.values():
        assert info["spill_bytes"] == 0 and info["shared_bytes"] <= 232448
        assert 240 in info["setmaxnreg"] and 24 in info["setmaxnreg"]   # consumers / producer


def test_overlap_runs_the_softmax_under_p_v_and_holds_p(sass):
    assert sass[0]["mufu_under_pv_wait0"] == 0                 # serial: waited at once
    assert sass[2]["mufu_under_pv_wait0"] == 66                # every exp2 of a 64 x 128 step
    assert sass[2]["rs_hazards_wait0"] == 0 and sass[0]["rs_hazards_wait0"] == 0


def test_bad_input_is_one_clear_error():
    torch = pytest.importorskip("torch")
    q = torch.zeros(1, 1, 100, 128, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="M % 128"):
        fa_gluon_launch.gluon_fa(q, q, q)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["g-s3-o0", "g-s3-o2", "g-s3-o2-pp"])
@pytest.mark.parametrize("m", [1024, 2048])
def test_matches_sdpa_on_the_gpu(name, m):
    torch = pytest.importorskip("torch")
    from hwkernels import fa

    shape = fa.FAShape(batch=2, heads=8, seq_len=m, head_dim=128, sp=2)
    q, k, v = fa.generate_input(shape, seed=3)
    st, ov, pp, pers = fa_gluon_sass.CANDIDATES[name]
    out, _ = fa_gluon_launch.gluon_fa(q, k, v, stages=st, overlap=ov, pingpong=pp,
                               programs=None if pers else shape.n_tiles)
    torch.cuda.synchronize()
    ok, err = fa.check_local(out, fa.reference(q, k, v))
    assert ok, err


@pytest.fixture(scope="module")
def epilogues():
    """The fused / cc / instrumented / DELTA kernels as launch_gluon_fa runs them (2 stages, 16 B
    stores, the run clock on), compiled for sm_90 on the CPU."""
    pytest.importorskip("triton.experimental.gluon")
    from hwkernels import fa_sass

    out = {}
    try:
        for mode, instr, delta in ((0, False, False), (1, True, False), (2, True, True),
                                   (3, True, False)):
            k = fa_gluon_sass.compile_offline(2, 2, 0, mode, instr, delta, store16=True,
                                              order=int(mode == 3), pstride=16, clk=True)
            out[mode] = (fa_gluon_sass.inspect(k), fa_sass.sass_of(k.asm["cubin"]))
    except Exception as exc:  # noqa: BLE001 - no ptxas / no CUDA backend here
        pytest.skip(f"cannot compile Gluon for sm_90 here: {exc}")
    return out


def test_epilogues_store_16_bytes_per_thread_and_fit_shared_memory(epilogues):
    import re

    for mode, (info, sass) in epilogues.items():
        assert info["spill_bytes"] == 0 and info["shared_bytes"] <= 232448, mode
        assert info["mufu_under_pv_wait0"] == 66, mode       # the mainloop unchanged
        stores = re.findall(r"STG\.E\S*", sass)
        assert stores.count("STG.E.128") >= 16, (mode, stores)    # a 64 x 128 half tile, 16 B each
        assert "STG.E" not in stores and "STG.E.U16" not in stores, mode   # no 4 B or 2 B stores
    assert "MEMBAR.SC.SYS" in epilogues[2][1] and "MEMBAR.SC.SYS" not in epilogues[1][1]
    for mode, (_, sass) in epilogues.items():   # CLK: the two 64-bit sums, once per program
        assert len(re.findall(r"(?:RED|ATOMG?)\.E\.ADD\S*64", sass)) == 2, (mode, re.findall(r"(?:RED|ATOMG?)\S*", sass))
    # paced: the chunk code adds a handful of instructions to the Q-loop, not a second mainloop
    assert epilogues[3][0]["loop_instructions"] - epilogues[1][0]["loop_instructions"] < 20


def test_gluon_mainloop_refuses_what_it_does_not_run():
    torch = pytest.importorskip("torch")
    from hwkernels import fa
    from hwkernels.fa_variants import KernelConfig

    with pytest.raises(ValueError, match='"mainloop" must be one of'):
        KernelConfig(mainloop="cuda")
    shape = fa.FAShape(batch=1, heads=2, seq_len=256, head_dim=64, sp=2)
    q = torch.zeros(shape.qkv_shape, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="head_dim = block_m = block_n = 128"):
        fa_gluon_launch.launch_gluon_fa(q, q, q, shape, 1)
    with pytest.raises(ValueError, match="modes 0-3"):
        fa_gluon_launch.launch_gluon_fa(q, q, q, shape, 4)


def test_fa_bench_refuses_gluon_variants_it_does_not_run(capsys):
    from hwkernels import fa_bench

    assert fa_bench.main(["--out", "unused.jsonl", "--mainloop", "gluon", "--variants",
                          "cc-atomic"]) == 2
    assert "not in the gluon mainloop's" in capsys.readouterr().err
    assert fa_bench.main(["--out", "unused.jsonl", "--mainloop", "gluon", "--head-dim", "64"]) == 2


def test_run_clock_is_cycles_over_nanoseconds():
    torch = pytest.importorskip("torch")
    from hwkernels.fa_variants import Case

    case = object.__new__(Case)               # only the clock sums: no GPU, no inputs
    case.clock = torch.tensor([3_300_000, 2_000_000], dtype=torch.int64)
    assert case.run_clock_mhz() == pytest.approx(1650.0)
    case.clock.zero_()
    assert case.run_clock_mhz() is None       # nothing launched a Gluon kernel


@pytest.mark.gpu
@pytest.mark.parametrize("m,sp,rank", [(1024, 4, 2), (2048, 2, 0), (4096, 4, 3)])
def test_gluon_variants_on_the_gpu_receiver_side(m, sp, rank):
    torch = pytest.importorskip("torch")
    from hwkernels.destination import host_buffer
    from hwkernels.fa import FAShape
    from hwkernels.fa_variants import GLUON_VARIANTS, Case, KernelConfig

    shape = FAShape(batch=2, heads=8, seq_len=m, head_dim=128, sp=sp, rank=rank)
    host = host_buffer(2 * shape.remote_bytes, torch.device("cuda", 0))
    case = Case(shape, KernelConfig(mainloop="gluon"), host.cuda, 2, 132)
    for variant in [v for v in GLUON_VARIANTS if v != "fused-paced"]:   # paced: the test below
        case.poison(variant)
        case.clock.zero_()
        for slot in range(case.slots):
            case.enqueue(variant, slot, instrument=variant in ("fa-only", "fused", "cc-asm"))
        torch.cuda.synchronize()
        ok, err = case.check(variant)
        assert ok, (m, variant, err)
        mhz = case.run_clock_mhz()        # CLK: every Gluon launch adds its cycles and ns
        if variant in ("fa-only", "serial", "fused", "cc-asm"):
            assert 500 < mhz <= 2100, (variant, mhz)
        else:
            assert mhz is None, (variant, mhz)
        if variant in ("fused", "cc-asm"):
            t = case.tile_times()
            assert (t["issue_span_us"] >= 0).all() and (t["qloop_us"] > 0).all(), variant
            assert 500 < float(t["clock_mhz"].min()) <= 2100, variant


@pytest.mark.gpu
@pytest.mark.parametrize("m,sp,rank", [(1024, 4, 2), (3072, 4, 0), (4096, 2, 1)])
def test_gluon_paced_on_the_gpu_receiver_side(m, sp, rank):
    """Fused-paced (MODE 3, remote-first, 8 chunks): every owner's slice in every ring slot, and
    the instrumented launch, against the reference."""
    torch = pytest.importorskip("torch")
    from hwkernels.destination import host_buffer
    from hwkernels.fa import FAShape
    from hwkernels.fa_variants import Case, KernelConfig

    shape = FAShape(batch=2, heads=8, seq_len=m, head_dim=128, sp=sp, rank=rank)
    host = host_buffer(2 * shape.remote_bytes, torch.device("cuda", 0))
    case = Case(shape, KernelConfig(mainloop="gluon"), host.cuda, 2, 132)
    for instrument in (False, True):
        case.poison("fused-paced")
        for slot in range(case.slots):
            case.enqueue("fused-paced", slot, instrument=instrument)
        torch.cuda.synchronize()
        ok, err = case.check("fused-paced")
        assert ok, (m, instrument, err)


def test_stagger_needs_the_gluon_mainloop():
    pytest.importorskip("torch")
    from hwkernels.fa_variants import KernelConfig

    assert KernelConfig(mainloop="gluon", stagger_us=50.0).stagger_us == 50.0
    for bad in (dict(stagger_us=50.0), dict(mainloop="gluon", stagger_us=-1.0)):
        with pytest.raises(ValueError, match="stagger_us"):
            KernelConfig(**bad)


@pytest.mark.gpu
def test_gluon_fused_staggered_on_the_gpu():
    """stagger_us: every slot still checks on the receiver side, and program p's first tile starts
    about stagger * p / K later than program 0's (stamps)."""
    torch = pytest.importorskip("torch")
    import numpy as np

    from hwkernels.destination import host_buffer
    from hwkernels.fa import FAShape
    from hwkernels.fa_variants import Case, KernelConfig

    shape = FAShape(batch=2, heads=8, seq_len=4096, head_dim=128, sp=4, rank=1)
    host = host_buffer(2 * shape.remote_bytes, torch.device("cuda", 0))
    case = Case(shape, KernelConfig(mainloop="gluon", stagger_us=40.0), host.cuda, 2, 132)
    case.poison("fused")
    for slot in range(case.slots):
        case.enqueue("fused", slot, instrument=slot == 0)
    torch.cuda.synchronize()
    ok, err = case.check("fused")
    assert ok, err
    k = min(132, shape.n_tiles)                # the grid (128 tiles here: one wave)
    starts = case.stamps.cpu().numpy()[:k, 0].astype(np.float64) / 1e3   # program p's first tile
    late = starts - starts[0]
    want = 40.0 * np.arange(k) / k
    assert np.median(np.abs(late - want)) < 3.0 and late[-1] > 30.0, (late[:4], late[-4:])
