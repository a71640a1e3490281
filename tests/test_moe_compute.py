"""The compute model: a linear fit of measured mainloops per key, else the roofline."""

import json

import pytest

from xsim.moe.compute import ROOFLINE_PEAKS, mainloop_model, roofline_tile_us
from xsim.moe.compute_fit import fit_records
from xsim.moe.shapes import MoEShape

SHAPE = MoEShape(hidden=2048, intermediate=1024, experts=8, topk=2, tokens=512, precision="fp8")


def record(kind, k_dim, median, precision="fp8", block_n=128, ok=True):
    # test data made up for the fit, not a measurement
    return {"experiment": "moe", "kind": "mainloop", "check": {"ok": ok},
            "params": {"precision": precision, "block_m": 128, "block_n": block_n, "k_dim": k_dim, "kind": kind},
            "stats": {"mainloop_us": {"median": median}}}


def test_roofline_is_compute_bound_for_a_large_k():
    peaks = ROOFLINE_PEAKS["h200"]
    t = roofline_tile_us(SHAPE, "l2", peaks, 132, weight_reuse=1e9)
    assert t == pytest.approx(2 * 128 * 128 * 1024 / (1580e6 / 132))   # FLOPs / per-SM FLOP/us
    assert roofline_tile_us(SHAPE, "l1", peaks, 132, 1e9) == pytest.approx(2 * 128 * 256 * 2048 / (1580e6 / 132))
    slow = roofline_tile_us(SHAPE, "l2", peaks, 132, weight_reuse=1.0)   # weights read once per tile
    assert slow > t


def test_fit_gives_the_fixed_cost_and_slope(tmp_path):
    recs = [record("l2", 512, 3.0), record("l2", 1024, 5.0), record("l2", 2048, 9.0), record("l2", 4096, 1.0, ok=False)]
    fit = fit_records(recs)[("fp8", 128, 128, "l2")]
    assert fit.fixed_us == pytest.approx(1.0) and fit.per_k_us == pytest.approx(1 / 256)
    path = tmp_path / "x-moe.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    model = mainloop_model("x", 132, str(path))
    assert model.l2_us(SHAPE) == pytest.approx(1.0 + 1024 / 256)
    assert model.source(SHAPE) == {"l1": "roofline", "l2": "records"}
    assert mainloop_model("x", 132, str(path), use_records=False).source(SHAPE)["l2"] == "roofline"


def test_one_point_scales_in_proportion():
    fit = fit_records([record("l1", 2048, 8.0)])[("fp8", 128, 128, "l1")]
    assert fit.at(4096) == pytest.approx(16.0)


def test_overheads_from_the_mainloop_records():
    rec = record("l1", 2048, 8.0, precision="bf16")
    rec["stats"].update({"wait_us": {"median": 0.8}, "store_us": {"median": 0.5}, "signal_us": {"median": 1.0}})
    model = mainloop_model("x", 132, records=[rec])
    shape = MoEShape(hidden=2048, intermediate=1024, experts=8, topk=2, tokens=512)
    assert model.overhead_us(shape, "l1", "wait_us") == pytest.approx(0.8)
    assert model.l1_epilogue_us(shape) == pytest.approx(1.5)
    assert model.overhead_us(shape, "l2", "wait_us") == 0.0


def test_fused_local_records_are_preferred_per_key():
    gemm = [record("l2", 1024, 5.0), record("l2", 2048, 9.0), record("l1", 2048, 8.0)]
    fused = [record("l2", 1024, 7.0), record("l2", 2048, 12.0)]
    for r in fused:
        r["params"]["source"] = "fused-local"
        r["stats"]["store_us"] = {"median": 0.4}
    gemm[0]["stats"].update({"wait_us": {"median": 0.9}, "store_us": {"median": 0.2}})
    fits = fit_records(gemm + fused)
    assert fits[("fp8", 128, 128, "l2")].at(1024) == pytest.approx(7.0)   # fused only
    assert fits[("fp8", 128, 128, "l1")].at(2048) == pytest.approx(8.0)   # no fused l1: gemm
    model = mainloop_model("x", 132, records=gemm + fused)
    assert model.overhead_us(SHAPE, "l2", "store_us") == pytest.approx(0.4)   # preferred
    assert model.overhead_us(SHAPE, "l2", "wait_us") == pytest.approx(0.9)    # filled in


def fused(kind, k_dim, mean, hidden, intermediate, **stats):
    # test data made up for the model, not a measurement
    rec = record(kind, k_dim, mean + 1.0)           # a median that must not be used per shape
    rec["params"].update({"source": "fused-local", "hidden": hidden, "intermediate": intermediate})
    rec["stats"]["mainloop_us"]["mean"] = mean
    rec["stats"].update({k: {"median": v} for k, v in stats.items()})
    return rec


def test_records_of_the_very_shape_beat_the_fit():
    recs = [fused("l2", 1024, 6.0, 2048, 1024), fused("l2", 1024, 8.0, 2048, 1024),   # two schedules
            fused("l2", 2048, 20.0, 4096, 2048)]
    model = mainloop_model("x", 132, records=recs)
    assert model.l2_us(SHAPE) == pytest.approx(7.0)                    # mean of the shape's means
    assert model.source(SHAPE)["l2"] == "shape"
    other = MoEShape(hidden=1024, intermediate=1536, experts=8, topk=2, tokens=512, precision="fp8")
    fit = fit_records(recs)[("fp8", 128, 128, "l2")]                  # medians, over k
    assert model.l2_us(other) == pytest.approx(fit.at(1536)) and model.source(other)["l2"] == "records"


def test_fixed_costs_around_the_mainloops():
    l1 = fused("l1", 2048, 8.0, 2048, 1024, wait_us=0.8, gap_us=0.2, epilogue_us=2.0, store_us=0.5,
               signal_us=1.0, kernel_outside_us=6.5)
    l2 = fused("l2", 1024, 4.0, 2048, 1024, gap_us=0.1, epilogue_us=0.3, store_us=0.4)
    model = mainloop_model("x", 132, records=[l1, l2])
    assert model.before_mainloop_us(SHAPE, "l1") == pytest.approx(1.0)   # gap + wait
    assert model.before_mainloop_us(SHAPE, "l2") == pytest.approx(0.1)   # no fixed L2 wait recorded
    assert model.l1_epilogue_us(SHAPE) == pytest.approx(3.5)             # epilogue + store + signal
    assert model.l2_epilogue_us(SHAPE) == pytest.approx(0.3)
    assert model.kernel_outside_us == pytest.approx(6.5)
    assert mainloop_model("x", 132, records=[l2]).kernel_outside_us == 0.0   # only L1 records carry it


def test_the_spread_per_shape_and_per_key():
    def with_quantiles(rec, p10, mean, p90):
        rec["stats"]["mainloop_us"].update({"p10": p10, "mean": mean, "p90": p90})
        return rec
    a = with_quantiles(fused("l2", 1024, 10.0, 2048, 1024), 8.0, 10.0, 12.0)     # CV 4 / 25.6
    b = with_quantiles(fused("l2", 2048, 20.0, 4096, 2048), 18.0, 20.0, 22.0)    # CV 4 / 51.3
    model = mainloop_model("x", 132, records=[a, b])
    cv_a, cv_b = 4.0 / (2 * 1.2815515655446004 * 10.0), 4.0 / (2 * 1.2815515655446004 * 20.0)
    assert model.spread(SHAPE, "l2") == pytest.approx(cv_a)
    other = MoEShape(hidden=1024, intermediate=1536, experts=8, topk=2, tokens=512, precision="fp8")
    assert model.spread(other, "l2") == pytest.approx((cv_a + cv_b) / 2)        # every shape of the key
    assert model.spread(SHAPE, "l1") == 0.0                                      # no records: no spread


def layer_record(kind, mean, schedule, config="moe1-x", p10=None, p90=None, **layer):
    # test data made up for the model, not a measurement
    rec = fused(kind, 1024, mean, 2048, 1024)
    rec["params"].update({"schedule": schedule, "config": config, **layer})
    if p10 is not None:
        rec["stats"]["mainloop_us"].update({"p10": p10, "p90": p90})
    return rec


LAYER = dict(experts=8, topk=2, tokens=512, ep=1)   # SHAPE's layer


def test_records_of_the_very_layer_beat_the_shape_pool():
    mine = [layer_record("l2", 6.0, "wave", **LAYER), layer_record("l2", 8.0, "interleaved", **LAYER)]
    other_layer = [layer_record("l2", 20.0, "wave", **{**LAYER, "tokens": 4096})]   # same hidden, intermediate
    model = mainloop_model("x", 132, records=mine + other_layer)
    assert model.l2_us(SHAPE) == pytest.approx(7.0) and model.source(SHAPE)["l2"] == "layer"
    pooled = mainloop_model("x", 132, records=mine + other_layer, pool="shape")
    assert pooled.l2_us(SHAPE) == pytest.approx(34.0 / 3) and pooled.source(SHAPE)["l2"] == "shape"
    alone = MoEShape(hidden=2048, intermediate=1024, experts=16, topk=2, tokens=512, precision="fp8")
    assert model.l2_us(alone) == pytest.approx(34.0 / 3) and model.source(alone)["l2"] == "shape"  # no record of it


def test_a_record_without_the_layer_takes_it_from_its_scenario():
    from xsim.moe.compute_fit import scenario_layer

    assert scenario_layer("moe1-qwen3-30b-bf16-zipf-4096") == (128, 8, 4096, 1)
    assert scenario_layer("no-such-scenario") is None
    rec = layer_record("l2", 5.0, "wave", config="moe1-qwen3-30b-bf16-zipf-4096")   # no layer params
    qwen = MoEShape(hidden=2048, intermediate=1024, experts=128, topk=8, tokens=4096, precision="fp8")
    model = mainloop_model("x", 132, records=[rec, layer_record("l2", 9.0, "wave", config="no-such-scenario")])
    assert model.source(qwen)["l2"] == "layer" and model.l2_us(qwen) == pytest.approx(5.0)


def test_the_schedule_pool_gives_each_schedule_its_own_mean_and_spread():
    recs = [layer_record("l2", 6.0, "wave", p10=5.0, p90=7.0, **LAYER),
            layer_record("l2", 8.0, "interleaved", p10=6.0, p90=10.0, **LAYER)]
    model = mainloop_model("x", 132, records=recs, pool="schedule")
    mean, cv = model.schedule_mainloop(SHAPE, "l2", "interleaved")
    assert mean == pytest.approx(8.0) and cv == pytest.approx(4.0 / (2 * 1.2815515655446004 * 8.0))
    assert model.schedule_mainloop(SHAPE, "l2", "wave")[0] == pytest.approx(6.0)
    assert model.l2_us(SHAPE) == pytest.approx(7.0)                     # the pooled mean is still the layer's
    assert model.schedule_mainloop(SHAPE, "l1", "wave") is None
    assert mainloop_model("x", 132, records=recs).schedule_mainloop(SHAPE, "l2", "wave")[0] == pytest.approx(6.0)
    with pytest.raises(ValueError, match='"pool" must be one of'):
        mainloop_model("x", 132, records=recs, pool="config")


def test_each_platform_reads_its_own_gpu():
    """The roofline and the selector's L2 follow the platform's GPU: an H100 is not an H200."""
    from xsim.moe.compute import ROOFLINE_PEAKS, gpu_of, peaks_for
    from xsim.moe.selector import L2_CACHE_BYTES

    assert [gpu_of(n) for n in ("h200-pcie-host", "h200-nvlink-x2", "h100-pcie-host", "paper-8gpu")] == \
        ["h200", "h200", "h100", "b200"]
    assert peaks_for("h100-pcie-host")["hbm_tbps"] < peaks_for("h200-pcie-host")["hbm_tbps"]
    assert set(ROOFLINE_PEAKS) == set(L2_CACHE_BYTES) and L2_CACHE_BYTES["h100"] < L2_CACHE_BYTES["h200"]
