"""The load-gate microbenchmark's host side (CPU): plan, stamps to times, samples, checks, and the
runner's poison/check/record loop against a CPU stand-in for the kernel; the kernel itself on a GPU."""

import types

import numpy as np
import pytest

from hwkernels import loadgate as lg
from hwkernels import loadgate_plan as plan
from hwkernels.loadgate_kernels import ROLE_FLAG_LOAD, ROLE_LATE, ROLE_LOAD, ROLE_STORE, ROLE_STORE_LOAD

KIB = 1024


def _stamps(ctas, roles, smids, ghz=2.0, spans_ns=(500, 1000, 3000, 20000)):
    """Synthetic stamps: CTA q starts at q ns, spans (issue, wait, first load, load) in ns at ``ghz``."""
    st = np.zeros((ctas, 8), np.int64)
    info = np.zeros((ctas, 8), np.int64)
    base_ns = 1_800_000_000_000_000_000
    for q in range(ctas):
        c0 = 10_000 + 7 * q
        issue, wait, first, load = (int(s * ghz) for s in spans_ns)
        st[q, :5] = [c0, c0 + issue, c0 + issue + wait, c0 + issue + wait + first, c0 + issue + wait + load]
        info[q, :4] = [base_ns + q, c0 - 100, base_ns + q + 100_000, c0 - 100 + int(100_000 * ghz)]
        info[q, 4:7] = [smids[q], roles[q], q]
    return st, info


def test_plan_covers_the_brief():
    pts = plan.full_plan()
    main = {(p.ctas, p.burst_bytes, p.load_bytes) for p in pts if p.variant == "main" and p.load == "ld.v4"}
    assert len(main) == 4 * 6 * 3 and (132, 0, 1024 * KIB) in main
    assert {p.variant for p in pts} == set(plan.VARIANTS) - set(plan.LATE_VARIANTS)
    cosm = [p for p in pts if p.variant == "cosm"]
    assert all(p.ctas == 264 and p.store_ctas == 132 and p.mode == "cosm" for p in cosm)
    assert plan.gap_us(132, 32 * KIB, 1.0) == pytest.approx(82.5, abs=0.1)    # V / R at 52.4 GB/s
    assert len({p.key for p in pts}) == len(pts)
    with pytest.raises(ValueError, match='"variant"'):
        plan.Point("nope", 1, 0, 16)


def test_late_plan_separates_the_readings():
    pts = plan.late_plan()
    assert len({p.key for p in pts}) == len(pts) and {"late", "stream", "main", "bystander"} <= {p.variant for p in pts}
    late = [p for p in pts if p.variant in plan.LATE_VARIANTS]
    assert all(p.mode == "late" and p.late_ctas == p.ctas - p.storers for p in late)
    # set C's bytes several times the ~322 kB threshold, and references with nothing stored for each shape
    assert any(p.late_ctas * p.late_bytes * p.late_bursts >= 10 * 322_000 for p in late)
    shapes = {(p.storers, p.load_bytes, p.load) for p in late}
    assert all(("late", s) in {(p.variant, (p.storers, p.load_bytes, p.load)) for p in late
                               if p.burst_bytes == 0 and p.late_bytes == 0} for s in shapes)
    p = plan.Point("stream", 4, 32, 64, storers=2, late_bytes=48, late_bursts=3, late_delay_us=1.5, late_spin_us=2)
    assert p.volume_bytes == 2 * 32 + 2 * 3 * 48 and p.key.endswith("C0K_D1.5_N3_P2")
    assert p.params()["late_ctas"] == 2 and "late_bytes" not in plan.Point("main", 4, 32, 64).params()
    with pytest.raises(ValueError, match='"storers"'):
        plan.Point("late", 4, 32, 64)
    with pytest.raises(ValueError, match="late_"):
        plan.Point("main", 4, 32, 64, late_bytes=16)


def test_fencelate_plan_tells_a_link_fence_from_the_bytes_ahead():
    """Set A fences between its stores and its loads while set C stores; C's total below and above
    the gate's ~330 kB, A below and past Q; every shape has its no-C and no-store references."""
    pts = plan.SUITES["fencelate"]()
    assert len({p.key for p in pts}) == len(pts)
    fl = [p for p in pts if p.variant == "late-fence"]
    assert all(p.fence and p.mode == "late" and p.late_ctas == p.ctas - p.storers for p in fl)
    assert not plan.Point("late", 4, 32, 64, storers=2).fence and plan.Point("fence", 4, 32, 64).fence
    totals = {p.late_ctas * p.late_bytes for p in fl}
    assert any(0 < t < 330_000 for t in totals) and any(t > 2 * 330_000 for t in totals)
    for p in fl:
        ref = {(q.storers, q.burst_bytes) for q in fl if q.late_bytes == 0}
        assert (p.storers, p.burst_bytes) in ref and (p.storers, 0) in ref
    assert {"fence", "late"} <= {p.variant for p in pts}
    assert plan.Point("late-fence", 4, 32, 64, storers=2, late_bytes=16, late_delay_us=5).key.startswith("late-fence_K4")


def test_fencelate_heldout_plan_has_large_late_bytes_and_every_reference():
    pts = plan.SUITES["fencelate-heldout"]()
    assert len({p.key for p in pts}) == len(pts) and {p.variant for p in pts} == {"late-fence"}
    late = [p for p in pts if p.late_bytes]
    assert all(p.late_ctas * p.late_bytes > 0.5 * p.store_ctas * p.burst_bytes for p in late)   # C against A
    refs = {(p.storers, p.burst_bytes) for p in pts if p.late_bytes == 0}
    assert all((p.storers, p.burst_bytes) in refs and (p.storers, 0) in refs for p in late)
    old = {p.key for p in plan.SUITES["fencelate"]()}
    assert sum(p.key in old for p in late) == 2            # two fencelate points repeated


def test_fencestream_plan_streams_c_at_about_the_link_rate_past_a_fence():
    pts = plan.SUITES["fencestream"]()
    assert len({p.key for p in pts}) == len(pts)
    streams = [p for p in pts if p.variant == "stream-fence"]
    assert streams and all(p.fence and p.mode == "late" and p.late_bursts > 1 for p in streams)
    rates = sorted({round(p.late_ctas * p.late_bytes / p.late_spin_us / 1e3, 1) for p in streams})   # GB/s
    assert rates[0] < 52.4 / 1.5 and rates[-1] > 52.4 * 1.5 and any(abs(r - 52.4) < 3 for r in rates)
    refs = {(p.storers, p.burst_bytes) for p in pts if p.variant == "late-fence"}
    assert all((p.storers, 0) in refs for p in streams)
    assert plan.Point("stream-fence", 4, 32, 64, storers=2, late_bytes=16, late_bursts=3, late_spin_us=2).key.endswith("N3_P2")


def test_late_samples_place_set_c_on_the_timeline():
    roles = [ROLE_STORE_LOAD, ROLE_STORE_LOAD, ROLE_LATE, ROLE_LATE]
    st, info = _stamps(4, roles, [0, 1, 2, 3])
    t = lg.times(st, info)
    s = lg.samples(t, 4096)
    assert len(s["load_us"]) == 2 and "bystander_load_us" not in s
    assert np.allclose(s["late_start_at_us"], [0.002, 0.003]) and np.allclose(s["load_end_at_us"], [21.5, 21.501])
    assert lg.layout_ok(t, "late", 4, 4) is None
    assert "late mode" in lg.layout_ok(lg.times(*_stamps(4, roles, [0, 1, 2, 2])), "late", 4, 3)


def test_times_map_clocks_and_samples_split_roles():
    roles = [ROLE_STORE_LOAD, ROLE_STORE_LOAD, ROLE_LOAD, ROLE_LOAD]
    st, info = _stamps(4, roles, [0, 1, 2, 3])
    t = lg.times(st, info)
    assert np.allclose(t.issue_us, 0.5) and np.allclose(t.wait_us, 1.0) and np.allclose(t.load_us, 20.0)
    assert np.allclose(t.first_load_us, 3.0) and np.allclose(t.after_issue_us, 21.0)
    assert t.issued_at_us[0] == pytest.approx(0.5) and t.issued_at_us[3] == pytest.approx(0.503)
    s = lg.samples(t, 4096)
    assert len(s["load_us"]) == 2 and len(s["bystander_load_us"]) == 2 and s["load_max_us"].shape == (1,)
    assert len(lg.samples(t, 0)["load_us"]) == 4 and "bystander_load_us" not in lg.samples(t, 0)


def test_cosm_layout_and_flag_delay():
    roles = [ROLE_STORE, ROLE_FLAG_LOAD, ROLE_FLAG_LOAD, ROLE_STORE]
    st, info = _stamps(4, roles, [0, 0, 1, 1])
    t = lg.times(st, info)
    assert lg.layout_ok(t, "cosm", 4, 2) is None
    assert "exactly two" in lg.layout_ok(t, "cosm", 4, 3)
    assert "shared an SM" in lg.layout_ok(t, "solo", 4, 2)
    s = lg.samples(t, 4096)
    assert np.allclose(s["flag_delay_us"], [1.0 + 0.001, 1.0 - 0.001])     # load start - storer's issue end


def test_check_result_wants_sums_from_loaders_and_poison_elsewhere():
    info = np.zeros((3, 8), np.int64)
    info[:, 5] = [ROLE_STORE, ROLE_FLAG_LOAD, ROLE_LOAD]
    ref = np.array([5, 6, 7])
    run = lg.Run(np.zeros((3, 8)), info, np.array([0xDEADBEEF, 6, 7]), 1.0, 0)
    assert lg.check_result(run, ref, 0xDEADBEEF) == (True, 0.0)
    run.result[2] = 8
    assert lg.check_result(run, ref, 0xDEADBEEF) == (False, 1.0)
    assert lg.describe_err(1 | 16) == "grid barrier timeout, bulk load timeout"


class _FakeKernel:
    """CPU stand-in: writes the pattern at dst, the sums into result, and plausible stamps."""

    sms = 4

    def __init__(self, dst_base, corrupt=False):
        self.dst_base, self.corrupt = dst_base, corrupt

    def run(self, dst_ptr, burst_bytes, src, load_bytes, result, ctas, n_store, mode, gap_cycles, fence, tma, threads,
            late_bytes=0, late_delay_cycles=0, late_bursts=0, late_spin_cycles=0):
        import torch

        self.fences = getattr(self, "fences", []) + [fence]

        from hwkernels.pattern import pattern_words

        off = dst_ptr - self.dst_base.data_ptr()
        stores = ctas // 2 if mode == "cosm" else n_store
        for p in range(stores if burst_bytes else 0):
            words = pattern_words(p, 0, burst_bytes // 4).view(np.int32)
            self.dst_base[off + p * burst_bytes: off + (p + 1) * burst_bytes] = torch.from_numpy(words.copy()).view(torch.uint8)
        n_late = ctas - n_store if mode == "late" else 0
        c_off = off + n_store * burst_bytes
        for j in range(late_bursts if late_bytes else 0):
            for p in range(n_late):
                words = pattern_words(p, j, late_bytes // 4).view(np.int32)
                at = c_off + (j * n_late + p) * late_bytes
                self.dst_base[at: at + late_bytes] = torch.from_numpy(words.copy()).view(torch.uint8)
        if self.corrupt and burst_bytes:
            self.dst_base[off] ^= 1
        if self.corrupt == "late":
            self.dst_base[c_off + late_bytes * late_bursts * n_late - 1] ^= 1
        sums = lg.region_sums(src, ctas, load_bytes)
        if mode == "cosm":
            roles = [ROLE_STORE if q < ctas // 2 else ROLE_FLAG_LOAD for q in range(ctas)]
            smids = [q % (ctas // 2) for q in range(ctas)]
        else:
            other = ROLE_LATE if mode == "late" else ROLE_LOAD
            roles = [ROLE_STORE_LOAD if q < n_store else other for q in range(ctas)]
            smids = list(range(ctas))
        for q in range(ctas):
            if roles[q] not in (ROLE_STORE, ROLE_LATE):
                result[q] = int(np.int64(sums[q]).astype(np.uint32).view(np.int32))
        st, info = _stamps(ctas, roles, smids)
        info[:, 6] = smids if mode == "cosm" else range(ctas)
        res = (result[:ctas].to(torch.int64) & 0xFFFFFFFF).numpy()
        return lg.Run(st, info, res, 50.0, 0)


def _ctx(monkeypatch, corrupt=False):
    torch = pytest.importorskip("torch")
    from hwkernels import harness

    monkeypatch.setattr(harness, "flush_l2_cache", lambda: None)
    dst = torch.zeros(64 * KIB * 8, dtype=torch.uint8)
    ctx = types.SimpleNamespace(torch=torch, slot_bytes=16 * KIB * 2, clock_ghz=2.0,
                                host=types.SimpleNamespace(cpu=dst, cuda=dst, ptr=dst.data_ptr()), local=dst,
                                src=torch.arange(4 * 64 * KIB // 4, dtype=torch.int32).view(torch.uint8),
                                result=torch.zeros(4, dtype=torch.int32), kernel=_FakeKernel(dst, corrupt))
    ctx.reference = lambda ctas, load: lg.region_sums(ctx.src, ctas, load)
    return ctx


@pytest.mark.parametrize("variant, ctas, storers", [("main", 2, None), ("bystander", 4, 2), ("cosm", 4, None)])
def test_runner_checks_then_keeps_samples(monkeypatch, variant, ctas, storers):
    from hwkernels.loadgate_bench import measure_point

    ctx = _ctx(monkeypatch)
    ctx.kernel.sms = ctas // 2 if variant == "cosm" else ctas
    pt = plan.Point(variant, ctas, 16 * KIB, 64 * KIB, storers=storers, repeats=3)
    m = measure_point(ctx, pt)
    assert m.ok and m.stats["load_us"].n == 3 * (2 if variant != "main" else ctas)
    assert ("bystander_load_us" in m.stats) == (variant == "bystander")
    assert ("flag_delay_us" in m.stats) == (variant == "cosm")


@pytest.mark.parametrize("corrupt", [False, "late"])
@pytest.mark.parametrize("variant", ["stream", "late-fence"])
def test_runner_checks_set_c_of_the_stream_variant(monkeypatch, corrupt, variant):
    from hwkernels.loadgate_bench import measure_point

    ctx = _ctx(monkeypatch, corrupt)
    ctx.slot_bytes = 64 * KIB
    bursts = 3 if variant == "stream" else 1
    pt = plan.Point(variant, 4, 8 * KIB, 64 * KIB, storers=2, late_bytes=4 * KIB, late_bursts=bursts, repeats=2)
    m = measure_point(ctx, pt)
    assert m.ok is (not corrupt)
    assert set(ctx.kernel.fences) == {variant == "late-fence"}   # the fence reaches the kernel
    if not corrupt:
        assert m.stats["load_us"].n == 2 * 2 and m.stats["late_start_at_us"].n == 2 * 2


def test_runner_fails_a_wrong_store(monkeypatch):
    from hwkernels.loadgate_bench import measure_point

    m = measure_point(_ctx(monkeypatch, corrupt=True), plan.Point("main", 2, 16 * KIB, 64 * KIB, repeats=2))
    assert not m.ok and m.stats is None


@pytest.mark.gpu
def test_loadgate_kernel_on_a_gpu():
    torch = pytest.importorskip("torch")
    pytest.importorskip("cupy")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from hwkernels.pattern import torch_check, torch_poison

    k = lg.LoadGateKernel(0)
    dst = torch.empty(8 * 16 * KIB, dtype=torch.uint8, device="cuda")
    src = torch.randint(-2**31, 2**31 - 1, (8 * 64 * KIB // 4,), dtype=torch.int32, device="cuda").view(torch.uint8)
    result = torch.zeros(8, dtype=torch.int32, device="cuda")
    for tma in (False, True):
        torch_poison(dst, dst.numel())
        r = k.run(dst.data_ptr(), 16 * KIB, src, 64 * KIB, result, 8, 8, "solo", 0, False, tma, 256)
        assert r.err == 0 and torch_check(dst, 8, 16 * KIB, 1) == (True, 0.0)
        assert lg.check_result(r, lg.region_sums(src, 8, 64 * KIB), 0)[0]
        assert (lg.times(r.stamps, r.info).load_us > 0).all()


def test_trickle_plan_brackets_the_link_rate_with_a_bystander_set_a():
    from hwkernels import loadgate_plan as plan

    pts = plan.trickle_plan()
    assert all(p.store_ctas == 66 and p.burst_bytes == 0 and p.load_bytes == plan.TRICKLE_LOAD_BYTES for p in pts)
    streams = [p for p in pts if p.variant == "stream"]
    rates = [p.late_ctas * p.late_bytes / p.late_spin_us / 1e3 for p in streams if p.late_spin_us]  # GB/s
    assert min(rates) < plan.PLAN_DRAIN_GBPS / 3 and max(rates) > 0.9 * plan.PLAN_DRAIN_GBPS
    volumes = {p.late_ctas * p.late_bytes for p in streams}
    assert min(volumes) < 330e3 < max(volumes)              # bursts below and above the gate
    assert all(p.late_bursts * max(p.late_spin_us, 20.0) >= plan.TRICKLE_WINDOW_US for p in streams)
    assert len({p.key for p in pts}) == len(pts) - 1        # the base runs first and last
