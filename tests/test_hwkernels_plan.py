import pytest

from hwkernels import plan
from hwkernels.plan import KB, Point


def test_full_plan_covers_what_the_fit_needs():
    pts = plan.full_plan()
    kinds = {p.kind for p in pts}
    assert kinds == {"periodic", "isolated", "local", "ce-copy", "nccl"}
    zero = [p for p in pts if p.kind == "periodic" and p.gap_frac is None and p.gap_us == 0
            and p.mechanism == "st.v4"]
    assert {(p.producers, p.burst_bytes) for p in zero} >= {
        (k, b) for k in (16, 33, 66, 132) for b in plan.R_FIT_BYTES}
    assert {p.aligned for p in zero} == {True, False}
    # gap sweeps: aligned and free-running, remote and local, 0 .. 3x the zero-gap period
    sweep = [p for p in pts if p.group == "gap" and (p.producers, p.burst_bytes) == (132, 32 * KB)]
    assert {(p.aligned, p.target) for p in sweep} >= {(a, t) for a in (True, False)
                                                      for t in ("remote", "local")}
    assert min(p.gap_frac for p in sweep) == 0.0 and max(p.gap_frac for p in sweep) >= 2.0
    iso = [p for p in pts if p.kind == "isolated" and p.group == "iso"]
    assert {p.producers for p in iso} == {16, 33, 66, 132}
    assert {"st.v4", "st.v2", "st.b32", "tma"} <= {p.mechanism for p in pts}
    assert {128, 256, 512} <= {p.threads for p in pts if p.group == "tiss0"}
    assert sum(p.trace for p in pts) >= 4
    assert len({p.key for p in pts if p.gap_frac is None}) > 100


def test_warmup_and_burst_counts():
    for p in plan.full_plan():
        if p.kind == "periodic" and p.group in ("rfit", "gap"):
            assert (p.bursts, p.warmup_bursts) == (64, 16)
        if p.kind == "isolated":
            assert p.gap_us >= 20.0 and p.aligned


def test_recovery_gap_drains_at_pessimistic_rate():
    v = 132 * 32 * KB
    assert plan.recovery_gap_us(v) == round(20 + 3 * v / 2e5, 1)


def test_resolve_gap():
    p = Point("periodic", 132, 32 * KB, gap_frac=0.5)
    q = p.resolve_gap(11.8)
    assert q.gap_us == 5.9 and q.gap_frac is None
    assert Point("periodic", 1, 16).resolve_gap(3.0).gap_us == 0.0
    with pytest.raises(ValueError):
        p.resolve_gap(0.0)


@pytest.mark.parametrize("kw, msg", [
    ({"kind": "bogus"}, "kind"),
    ({"burst_bytes": 100}, "burst_bytes"),
    ({"mechanism": "tma", "burst_bytes": 256 * KB}, "tma"),
    ({"warmup_bursts": 64}, "warmup_bursts"),
    ({"threads": 100}, "threads"),
    ({"target": "peer"}, "target"),
])
def test_point_validation(kw, msg):
    args = {"kind": "periodic", "producers": 4, "burst_bytes": 4096}
    args.update(kw)
    with pytest.raises(ValueError, match=msg):
        Point(**args)


def test_dst_bytes():
    # the ring: >= 4x the 60 MiB L2 in whole bursts, never more than the bursts run
    assert Point("periodic", 132, 32 * KB).dst_bytes == 59 * 132 * 32 * KB
    assert Point("periodic", 16, 4 * KB).dst_bytes == 64 * 16 * 4 * KB
    assert Point("ce-copy", 1, 1 << 20, mechanism="copy-engine").dst_bytes == 1 << 20
    assert max(p.dst_bytes for p in plan.full_plan()) <= 2 << 30


def test_host_plan_has_every_group_and_no_nccl():
    pts = plan.full_plan("host")
    assert {p.destination for p in pts} == {"host"}
    assert {p.kind for p in pts} == {"periodic", "isolated", "local", "ce-copy"}
    assert pts[0].kind == "ce-copy"                       # the CE rate is known before any store point
    first_tma = next(i for i, p in enumerate(pts) if p.mechanism == "tma")
    assert all(p.mechanism == "tma" for p in pts[first_tma:])   # a faulting mechanism runs last
    assert all(p.key.endswith(("_host", "_local")) for p in pts if p.kind != "ce-copy")
    iso = [p for p in pts if p.kind == "isolated" and p.group == "iso" and p.producers == 132]
    assert max(p.volume_bytes for p in iso) >= 12 * 2**20   # far past a few-MiB knee
    assert all(p.gap_us >= plan.recovery_gap_us(p.volume_bytes, "host") for p in iso)


def test_nccl_needs_a_peer():
    with pytest.raises(ValueError, match="nccl"):
        Point("nccl", 1, 4096, mechanism="nccl", threads=0, destination="host")


@pytest.mark.parametrize("destination", ["host", "peer"])
def test_newk_plan_runs_only_producer_counts_the_full_suite_never_does(destination):
    full_ks = {p.producers for p in plan.full_plan(destination) if p.kind in ("periodic", "isolated")}
    pts = plan.newk_plan(destination)
    stores = [p for p in pts if p.kind in ("periodic", "isolated")]
    assert pts[0].kind == "ce-copy"                       # the drain flag needs the CE rate first
    assert {p.producers for p in stores} == set(plan.NEWK_PRODUCERS)
    assert not set(plan.NEWK_PRODUCERS) & full_ks
    assert {p.mechanism for p in stores} == {"st.v4"} and {p.target for p in stores} == {"remote"}
    zero = {(p.producers, p.burst_bytes, p.aligned) for p in stores if p.kind == "periodic" and p.gap_frac is None}
    assert zero == {(k, b, a) for k in plan.NEWK_PRODUCERS for b in plan.R_FIT_BYTES for a in (True, False)}
    for k, b in plan.NEWK_GAP_CONFIGS:
        sweep = [p for p in stores if p.group == "gap" and (p.producers, p.burst_bytes) == (k, b)]
        assert {p.aligned for p in sweep} == {True, False} and max(p.gap_frac for p in sweep) >= 2.0
    traced = [p for p in stores if p.trace]
    assert sorted(p.producers for p in traced) == sorted(plan.NEWK_PRODUCERS)   # one placement each
    fixed = [p for p in pts if p.gap_frac is None]      # gap points get their key once resolved
    assert len({p.key for p in fixed}) == len(fixed)
