"""The MoE tile table under shared HBM: bytes per tile, the GEMM-only calibration, the anchored
pre-pass, and the builder's ``compute = contention`` mode."""

import numpy as np
import pytest

from xsim.builders import moe as builder
from xsim.moe import contention_model as cm
from xsim.moe.layout import expert_layout
from xsim.moe.routing import route
from xsim.moe.schedule import schedule_table
from xsim.moe.shapes import MoEShape
from xsim.moe.tiles import KIND, L1, L2
from xsim.params import resolve
from xsim.platform import shipped_platforms

SHAPE = MoEShape(hidden=256, intermediate=256, experts=4, topk=2, tokens=96, block_m=64, block_n1=64, block_n2=64)


def gemm_only(kind: str, mean_us: float, m: int = 128, shape: MoEShape = SHAPE) -> dict:
    return {"experiment": "moe", "kind": "mainloop", "check": {"ok": True},
            "params": {"precision": shape.precision, "block_m": shape.block_m, "block_n": 64, "kind": kind,
                       "k_dim": shape.hidden if kind == "l1" else shape.intermediate, "m": m,
                       "hidden": shape.hidden, "intermediate": shape.intermediate, "source": "gemm-only"},
            "stats": {"mainloop_us": {"mean": mean_us, "median": mean_us, "p10": mean_us, "p90": mean_us}}}


def layout_and_table(schedule="wave", n_streams=8):
    lay = expert_layout(SHAPE, route(SHAPE, "balanced", seed=0))
    return lay, schedule_table(SHAPE, lay, schedule, n_streams)


def test_tile_bytes_follow_the_shape():
    lay, table = layout_and_table()
    w, _, a, a_block = cm.tile_bytes(SHAPE, table, lay.mblock_valid_rows())
    kind, m = table.tiles[:, KIND], table.tiles[:, 2]
    assert np.all(w[kind == L1] == 256 * 2 * 64 * 2) and np.all(w[kind == L2] == 256 * 64 * 2)
    valid = lay.mblock_valid_rows()[m]
    # an m-block's activation rows are read once for its n-block tiles (4 of each kind here)
    assert np.allclose(a, valid * 256 * 2 / 4)
    assert len(np.unique(a_block)) == len(a_block)


def test_calibration_is_the_measured_mean_where_the_gemm_only_run_is_compute_bound():
    got = cm.calibrate_compute_us([gemm_only("l1", 20.0), gemm_only("l2", 10.0)], hbm_tbps=4.3, n_streams=8)
    assert got[cm.compute_key(SHAPE, "l1")] == pytest.approx(20.0)
    assert got[cm.compute_key(SHAPE, "l2")] == pytest.approx(10.0)


def test_calibration_inverts_a_bandwidth_bound_gemm_only_run():
    # 5 streams, 8 tiles: the first round shares 100 B/us five ways, the last three tiles run with
    # more each: the compute time found must make the simulated run's mean the measured one
    floor = cm.gemm_only_mean_us(SHAPE, L1, 128, 1e-3, 1e-4, 5)       # bandwidth alone
    measured = 1.1 * floor
    c = cm.calibrate_compute_us([gemm_only("l1", measured)], hbm_tbps=1e-4, n_streams=5)[cm.compute_key(SHAPE, "l1")]
    assert c < measured
    assert cm.gemm_only_mean_us(SHAPE, L1, 128, c, 1e-4, 5) == pytest.approx(measured, rel=1e-3)


def test_calibration_refuses_a_record_faster_than_the_bandwidth():
    with pytest.raises(ValueError, match="faster than the HBM bandwidth allows"):
        cm.calibrate_compute_us([gemm_only("l1", 10.0)], hbm_tbps=1e-5, n_streams=8)


def test_anchored_prepass_keeps_the_records_means_and_each_schedules_shape():
    lay = expert_layout(SHAPE, route(SHAPE, "balanced", seed=0))
    calib = {cm.compute_key(SHAPE, "l1"): 20.0, cm.compute_key(SHAPE, "l2"): 10.0}
    pre = cm.Prepass(SHAPE, lay.mblock_valid_rows(), calib, cm.FixedCosts(0.5, 0.5, 2.0, 0.2, 6.0),
                     {"l1": 30.0, "l2": 12.0}, hbm_tbps=1e-5, share="inflight", anchor="mean")
    inputs = {}
    for s in ("wave", "interleaved"):
        table = schedule_table(SHAPE, lay, s, 8)
        inputs[s] = (table, np.ones(table.n_tiles), np.zeros(table.n_tiles))
    pre.run_all(inputs)
    for kind, target in ((L1, 30.0), (L2, 12.0)):
        means = [pre.mainloops_us(s)[inputs[s][0].tiles[:, KIND] == kind].mean() for s in inputs]
        assert np.mean(means) == pytest.approx(target, rel=3e-3)


def test_prepass_errors_are_one_line():
    lay = expert_layout(SHAPE, route(SHAPE, "balanced", seed=0))
    with pytest.raises(ValueError, match="no GEMM-only mainloop record of this shape"):
        cm.Prepass(SHAPE, lay.mblock_valid_rows(), {}, cm.FixedCosts(), {"l1": 1, "l2": 1}, 4.3, "fair", "mean")
    with pytest.raises(ValueError, match='"contention_anchor" must be one of'):
        cm.Prepass(SHAPE, lay.mblock_valid_rows(), {}, cm.FixedCosts(), {"l1": 1, "l2": 1}, 4.3, "fair", "x")
    with pytest.raises(ValueError, match='"share" must be one of'):
        cm.share_weights(SHAPE, np.zeros(2), "greedy")
    with pytest.raises(ValueError, match='"pre_l1_us" must be >= 0'):
        cm.FixedCosts(pre_l1_us=-1.0)


def params(**kw):
    given = dict(hidden=256, intermediate=256, experts=4, topk=2, tokens=96, block_m=64, block_n1=64, block_n2=64,
                 n_streams=8)
    given.update(kw)
    return resolve(builder.PARAMS, given, "test")


def test_builder_contention_mode_gives_each_tile_its_mainloop_in_context():
    platform = shipped_platforms()["h200-pcie-host"]
    records = [gemm_only("l1", 20.0), gemm_only("l2", 10.0)]
    # 20000 B/us: the GEMM-only run (weights shared by 2 m-blocks) is compute-bound, the MoE tables
    # (one m-block per expert) are not
    p = params(compute="contention", hbm_tbps=0.02, mainloop_cv=0.0, routing="hot", skew=0.5)
    cfg = builder.Config(p, platform, records)
    per_tile = cfg.context_mainloops_us("wave")
    table = cfg.table("wave")
    assert per_tile.shape == (table.n_tiles,) and np.all(per_tile > 0)
    assert np.ptp(per_tile[table.tiles[:, KIND] == L1]) > 0      # the context differs from tile to tile
    _, summary = builder.simulate(p, platform, "fast", trace=False, mainloop_records=records)
    assert summary["speedup"] == pytest.approx(summary["wave"]["kernel_us"] / summary["interleaved"]["kernel_us"])
    assert summary["wave"]["kernel_us"] > 0


def test_builder_contention_mode_without_gemm_only_records_fails_clearly():
    platform = shipped_platforms()["h200-pcie-host"]
    with pytest.raises(ValueError, match="no GEMM-only mainloop record"):
        builder.Config(params(compute="contention"), platform, [gemm_only("l1", 20.0)])


def test_schedule_anchor_gives_each_schedule_its_own_means():
    lay = expert_layout(SHAPE, route(SHAPE, "balanced", seed=0))
    calib = {cm.compute_key(SHAPE, "l1"): 20.0, cm.compute_key(SHAPE, "l2"): 10.0}
    own = {"wave": {"l1": 33.0, "l2": 11.0}, "interleaved": {"l1": 28.0, "l2": 13.0}}   # made-up targets
    inputs = {}
    for s in own:
        table = schedule_table(SHAPE, lay, s, 8)
        inputs[s] = (table, np.linspace(0.8, 1.2, table.n_tiles), np.zeros(table.n_tiles))
    for spread in ("compute", "work"):
        pre = cm.Prepass(SHAPE, lay.mblock_valid_rows(), calib, cm.FixedCosts(0.5, 0.5, 2.0, 0.2, 6.0), own,
                         hbm_tbps=1e-5, share="fair", anchor="schedule", spread=spread)
        pre.run_all(inputs)
        for s, targets in own.items():
            kind = inputs[s][0].tiles[:, KIND]
            for k, name in ((L1, "l1"), (L2, "l2")):
                assert pre.mainloops_us(s)[kind == k].mean() == pytest.approx(targets[name], rel=3e-3)
    pre = cm.Prepass(SHAPE, lay.mblock_valid_rows(), calib, cm.FixedCosts(), {"wave": own["wave"]}, 1e-5, "fair",
                     "schedule")
    with pytest.raises(ValueError, match="no fused-local mean mainloops of the 'interleaved' schedule"):
        pre.run_all(inputs)
    with pytest.raises(ValueError, match='"contention_spread" must be one of'):
        cm.Prepass(SHAPE, lay.mblock_valid_rows(), calib, cm.FixedCosts(), own, 4.3, "fair", "schedule", "tiles")


def test_work_spread_keeps_a_bandwidth_bound_tiles_factor():
    lay, table = layout_and_table("wave")
    calib = {cm.compute_key(SHAPE, "l1"): 1.0, cm.compute_key(SHAPE, "l2"): 1.0}   # bandwidth-bound at 1e-5 TB/s
    factors = np.where(np.arange(table.n_tiles) % 2 == 0, 0.5, 1.5)
    out = {}
    for spread in ("compute", "work"):
        pre = cm.Prepass(SHAPE, lay.mblock_valid_rows(), calib, cm.FixedCosts(), {"l1": 0, "l2": 0}, 1e-5, "fair",
                         "none", spread)
        pre.run_all({"wave": (table, factors, np.zeros(table.n_tiles))})
        l1 = table.tiles[:, KIND] == L1
        ml = pre.mainloops_us("wave")
        out[spread] = ml[l1 & (factors > 1)].mean() / ml[l1 & (factors < 1)].mean()
    assert out["work"] > 1.5 and out["work"] > out["compute"]   # the drawn spread survives the shared bandwidth


def test_ratio_anchor_runs_once_and_scales_each_kind_to_the_records_means():
    lay = expert_layout(SHAPE, route(SHAPE, "balanced", seed=0))
    calib = {cm.compute_key(SHAPE, "l1"): 20.0, cm.compute_key(SHAPE, "l2"): 10.0}
    inputs = {}
    for s in ("wave", "interleaved"):
        table = schedule_table(SHAPE, lay, s, 8)
        inputs[s] = (table, np.linspace(0.8, 1.2, table.n_tiles), np.zeros(table.n_tiles))
    none = cm.Prepass(SHAPE, lay.mblock_valid_rows(), calib, cm.FixedCosts(0.5, 0.5, 2.0, 0.2, 6.0),
                      {"l1": 30.0, "l2": 12.0}, hbm_tbps=1e-5, share="inflight", anchor="none", spread="work")
    none.run_all(inputs)
    ratio = cm.Prepass(SHAPE, lay.mblock_valid_rows(), calib, cm.FixedCosts(0.5, 0.5, 2.0, 0.2, 6.0),
                       {"l1": 30.0, "l2": 12.0}, hbm_tbps=1e-5, share="inflight", anchor="ratio", spread="work")
    ratio.run_all(inputs)
    for kind, target in ((L1, 30.0), (L2, 12.0)):
        sel = {s: inputs[s][0].tiles[:, KIND] == kind for s in inputs}
        assert np.mean([ratio.mainloops_us(s)[sel[s]].mean() for s in inputs]) == pytest.approx(target, rel=1e-9)
        for s in inputs:   # one run: the unanchored run's mainloops times one factor per kind
            scale = ratio.mainloops_us(s)[sel[s]] / none.mainloops_us(s)[sel[s]]
            assert np.allclose(scale, scale[0], rtol=1e-12)
    assert ratio.post[L1] != 1.0 and ratio.post[L2] != 1.0


def test_residual_cv_takes_the_explained_spread_out_in_quadrature():
    assert cm.residual_cv(0.5, 0.3) == pytest.approx(0.4)
    assert cm.residual_cv(0.2, 0.3) == 0.0 and cm.residual_cv(0.2, 0.0) == pytest.approx(0.2)
    with pytest.raises(ValueError, match='"measured" and "explained" must be >= 0'):
        cm.residual_cv(-0.1, 0.0)


def test_context_cv_is_the_spread_of_the_runs_mainloops():
    lay = expert_layout(SHAPE, route(SHAPE, "hot", skew=0.5, seed=0))
    calib = {cm.compute_key(SHAPE, "l1"): 1.0, cm.compute_key(SHAPE, "l2"): 1.0}   # bandwidth-bound
    pre = cm.Prepass(SHAPE, lay.mblock_valid_rows(), calib, cm.FixedCosts(), {"l1": 0, "l2": 0}, 1e-5, "fair", "none")
    table = schedule_table(SHAPE, lay, "wave", 8)
    pre.run_all({"wave": (table, np.ones(table.n_tiles), np.zeros(table.n_tiles))})
    cv = pre.context_cv()
    for kind, name in ((L1, "l1"), (L2, "l2")):
        x = pre.mainloops_us("wave")[table.tiles[:, KIND] == kind]
        p10, p90 = np.percentile(x, [10, 90])
        assert cv[name] == pytest.approx((p90 - p10) / (2.5631031310892007 * x.mean()))
        assert cv[name] >= 0


def test_builder_residual_spread_draws_less_than_the_measured_one():
    platform = shipped_platforms()["h200-pcie-host"]
    records = [gemm_only("l1", 20.0), gemm_only("l2", 10.0), fused("l1", 30.0, 0.3), fused("l2", 12.0, 0.3)]
    base = dict(compute="contention", hbm_tbps=0.02, routing="hot", skew=0.5, contention_anchor="ratio",
                contention_spread="work")
    measured = builder.Config(params(**base), platform, records)
    residual = builder.Config(params(**base, contention_cv="residual"), platform, records)
    measured.context_mainloops_us("wave")
    residual.context_mainloops_us("wave")
    explained = residual.prepass.context_cv()   # the last run's: with the residual draw
    for k in ("l1", "l2"):
        assert measured.mainloop_cv[k] > 0
        assert residual.mainloop_cv[k] < measured.mainloop_cv[k]
    assert all(v >= 0 for v in explained.values())
    _, summary = builder.simulate(params(**base, contention_cv="residual"), platform, "fast", trace=False,
                                  mainloop_records=records)
    assert summary["mainloop_cv"]["l1"] == pytest.approx(residual.mainloop_cv["l1"])


def test_builder_spread_scale_scales_the_measured_spread():
    platform = shipped_platforms()["h200-pcie-host"]
    records = [fused("l1", 30.0, 0.3), fused("l2", 12.0, 0.3)]
    one = builder.Config(params(), platform, records).mainloop_cv
    half = builder.Config(params(spread_scale=0.5), platform, records).mainloop_cv
    assert one["l1"] > 0 and half["l1"] == pytest.approx(0.5 * one["l1"]) and half["l2"] == pytest.approx(0.5 * one["l2"])
    assert builder.Config(params(spread_scale=0.5, mainloop_cv=0.2), platform, records).mainloop_cv["l1"] == 0.2


def fused(kind: str, mean_us: float, cv: float, shape: MoEShape = SHAPE) -> dict:
    """A fused-local mainloop record of the test layer (any schedule) with the given spread."""
    half = 0.5 * cv * 2.5631031310892007 * mean_us
    return {"experiment": "moe", "kind": "mainloop", "check": {"ok": True},
            "params": {"precision": shape.precision, "block_m": shape.block_m, "block_n": 64, "kind": kind,
                       "k_dim": shape.hidden if kind == "l1" else shape.intermediate, "hidden": shape.hidden,
                       "intermediate": shape.intermediate, "experts": shape.experts, "topk": shape.topk,
                       "tokens": shape.tokens, "ep": shape.ep, "source": "fused-local", "schedule": "wave"},
            "stats": {"mainloop_us": {"mean": mean_us, "median": mean_us, "p10": mean_us - half, "p90": mean_us + half}}}


def test_ratio_residual_workload_runs_the_same_in_both_engines():
    from xsim.des import simulate

    platform = shipped_platforms()["h200-pcie-host"]
    records = [gemm_only("l1", 20.0), gemm_only("l2", 10.0), fused("l1", 30.0, 0.3), fused("l2", 12.0, 0.3)]
    p = params(compute="contention", hbm_tbps=0.02, routing="hot", skew=0.5, hbm_share="inflight",
               contention_anchor="ratio", contention_spread="work", contention_cv="residual")
    cfg = builder.Config(p, platform, records)
    for schedule in ("wave", "interleaved"):
        w = cfg.workload(schedule)
        slow, fast = simulate(w, engine="simpy", trace=False), simulate(w, engine="fast", trace=False)
        assert fast.makespan_us == slow.makespan_us
        np.testing.assert_array_equal(fast.times.mainloop_end, slow.times.mainloop_end)


@pytest.mark.parametrize("hbm_tbps, expect", [(1e6, 2.0), (1e-5, 1.0)])
def test_compute_scale_slows_the_tensor_cores_and_not_the_bytes(hbm_tbps, expect):
    lay, table = layout_and_table("interleaved")
    calib = {cm.compute_key(SHAPE, "l1"): 1.0, cm.compute_key(SHAPE, "l2"): 1.0}
    ml = {}
    for scale in (1.0, 2.0):
        pre = cm.Prepass(SHAPE, lay.mblock_valid_rows(), calib, cm.FixedCosts(0.5, 0.5, 2.0, 0.2, 6.0),
                         {"l1": 0, "l2": 0}, hbm_tbps, "fair", "none", compute_scale=scale)
        pre.run_all({"x": (table, np.ones(table.n_tiles), np.zeros(table.n_tiles))})
        ml[scale] = pre.mainloops_us("x")
    # compute-bound: every mainloop twice as long; bandwidth-bound: the bytes set the time at any clock
    np.testing.assert_allclose(ml[2.0] / ml[1.0], expect, rtol=0.02)


def test_compute_scale_one_is_the_unscaled_prepass_and_a_bad_scale_is_one_line():
    lay, table = layout_and_table("wave")
    calib = {cm.compute_key(SHAPE, "l1"): 20.0, cm.compute_key(SHAPE, "l2"): 10.0}
    runs = []
    for kw in ({}, {"compute_scale": 1.0}):
        pre = cm.Prepass(SHAPE, lay.mblock_valid_rows(), calib, cm.FixedCosts(), {"l1": 30.0, "l2": 12.0}, 4.3,
                         "inflight", "mean", **kw)
        pre.run_all({"wave": (table, np.ones(table.n_tiles), np.zeros(table.n_tiles))})
        runs.append(pre.mainloops_us("wave"))
    np.testing.assert_array_equal(*runs)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match='"compute_scale" must be a finite number > 0'):
            cm.Prepass(SHAPE, lay.mblock_valid_rows(), calib, cm.FixedCosts(), {"l1": 1, "l2": 1}, 4.3, "fair",
                       "mean", compute_scale=bad)


def test_builder_contention_mode_scales_the_compute_once():
    local = builder.without_link(shipped_platforms()["h200-pcie-host"])
    records = [gemm_only("l1", 20.0), gemm_only("l2", 10.0)]
    t = {c: builder.simulate(params(compute="contention", hbm_tbps=1e3, mainloop_cv=0.0, schedule="wave",
                                    compute_scale=c), local, trace=False, mainloop_records=records)[1]["kernel_us"]
         for c in (1.0, 2.0)}
    assert t[2.0] == pytest.approx(2 * t[1.0], rel=0.03)   # compute-bound: the pre-pass's clock, not squared


@pytest.mark.parametrize("name, roofline", [("h200-pcie-host", 4.3), ("h100-pcie-host", 3.0)])
def test_hbm_fraction_carries_the_bandwidth_to_each_gpus_roofline_figure(name, roofline):
    platform = shipped_platforms()[name]
    records = [gemm_only("l1", 20.0), gemm_only("l2", 10.0)]
    for given, expect in (({}, roofline), ({"hbm_fraction": 0.5}, 0.5 * roofline),
                          ({"hbm_fraction": 0.5, "hbm_tbps": 2.0}, 2.0)):
        cfg = builder.Config(params(compute="contention", **given), platform, records)
        assert builder.prepass(cfg).hbm_tbps == pytest.approx(expect)


def test_a_local_run_reuses_the_host_runs_configs_and_matches_a_fresh_one(monkeypatch):
    """builder.simulate(configs=...): the local run (without_link) takes the host run's Configs, pre-pass and
    residual spread included, and gives what a run of its own gives."""
    platform = shipped_platforms()["h200-pcie-host"]
    records = [gemm_only("l1", 20.0), gemm_only("l2", 10.0), fused("l1", 30.0, 0.3), fused("l2", 12.0, 0.3)]
    p = params(compute="contention", hbm_tbps=0.02, routing="hot", skew=0.5, contention_anchor="ratio",
               contention_spread="work", contention_cv="residual", schedule="both", spread_seeds=2)
    local = builder.without_link(platform)
    fresh = builder.simulate(p, local, "fast", trace=False, mainloop_records=records)[1]
    configs: dict = {}
    builder.simulate(p, platform, "fast", trace=False, mainloop_records=records, configs=configs)
    assert sorted(configs) == [0, 1]
    made = []
    real = builder.Config.__init__
    monkeypatch.setattr(builder.Config, "__init__", lambda self, *a, **k: (made.append(1), real(self, *a, **k))[1])
    reused = builder.simulate(p, local, "fast", trace=False, mainloop_records=records, configs=configs)[1]
    assert not made
    for schedule in ("wave", "interleaved"):
        assert reused[schedule]["kernel_us_per_seed"] == fresh[schedule]["kernel_us_per_seed"]
    assert reused["mainloop_cv"] == fresh["mainloop_cv"]
