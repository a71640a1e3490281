"""The numba engine equals the SimPy engine: per-tile tables, q(t) traces and summaries."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xsim.des import simulate
from xsim.des.simpy_engine import SimulationError
from xsim.load_gate import LoadGate
from xsim.platform import resolve_platform
from xsim.scenario import load_scenario
from xsim.workload import Workload, XStageParams

RTOL, ATOL = 1e-9, 1e-12
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

tile = st.fixed_dictionaries({
    "mainloop": st.sampled_from([0.0, 0.5, 1.0, 2.0]) | st.floats(0.0, 3.0),
    "epilogue": st.sampled_from([0.0, 0.0, 0.2, 1.0]),
    "bytes": st.sampled_from([0.0, 100.0, 700.0, 2500.0]) | st.floats(1.0, 5000.0),
    "t0": st.sampled_from([0.5, 1.0]) | st.floats(0.1, 2.0),
    "release": st.sampled_from([0.0, 0.0, 1.5, 4.0]),
    "wait": st.sampled_from([-1, -1, -1, -1, 0, 1, 2]), "value": st.integers(1, 2),
    "signal": st.integers(-1, 2), "on_drain": st.booleans(),
})
config = st.fixed_dictionaries({
    "streams": st.lists(st.lists(tile, min_size=1, max_size=5), min_size=1, max_size=5),
    "drain": st.sampled_from([1000.0]) | st.floats(100.0, 3000.0),
    "capacity": st.sampled_from([500.0]) | st.floats(200.0, 4000.0),
    "staging_depth": st.integers(0, 3),
    "coupling": st.sampled_from(["xstage", "completion-coupled"]),
    "gpus": st.integers(1, 3), "counters": st.integers(0, 3), "seed": st.integers(0, 2**16),
    "weights": st.booleans(),
})


def random_workload(cfg) -> Workload:
    """A workload from hypothesis' draw; counter references wrap onto the counters that exist."""
    tiles = [t for s in cfg["streams"] for t in s]
    n_c = cfg["counters"]
    counter = lambda c: c % n_c if n_c and c >= 0 else -1
    rng = np.random.default_rng(cfg["seed"])
    n_p = len(cfg["streams"])
    col = lambda key: np.array([t[key] for t in tiles], dtype=float)
    return Workload(
        offsets=np.cumsum([0] + [len(s) for s in cfg["streams"]]).astype(np.int64),
        producer_gpu=rng.integers(0, cfg["gpus"], n_p).astype(np.int64),
        kind=np.zeros(len(tiles), np.int64),
        mainloop_us=col("mainloop"), epilogue_us=col("epilogue"), bytes=col("bytes"),
        t_iss0_us=col("t0"), release_us=col("release"),
        wait_counter=np.array([counter(t["wait"]) for t in tiles], np.int64),
        wait_value=np.array([t["value"] for t in tiles], np.int64),
        signal_counter=np.array([counter(t["signal"]) for t in tiles], np.int64),
        signal_on_drain=np.array([t["on_drain"] for t in tiles], bool),
        n_counters=n_c,
        xstages=tuple(XStageParams(cfg["drain"] * (1 + g), cfg["capacity"]) for g in range(cfg["gpus"])),
        staging_depth=cfg["staging_depth"], coupling=cfg["coupling"],
        producer_weight=rng.uniform(0.5, 2.0, n_p) if cfg["weights"] else None,
    )


def run_both(w):
    """Both engines' results, or both engines' error messages."""
    out = []
    for engine in ("simpy", "fast"):
        try:
            out.append(simulate(w, engine))
        except SimulationError as exc:
            out.append(str(exc))
    return out


def assert_same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    ta, tb = a.table(), b.table()
    assert list(ta) == list(tb)
    for key in ta:
        if ta[key].dtype == object:
            assert list(ta[key]) == list(tb[key]), key
        else:
            np.testing.assert_allclose(tb[key], ta[key], rtol=RTOL, atol=ATOL, err_msg=key)
    assert len(a.traces) == len(b.traces)
    for (ta_t, ta_q), (tb_t, tb_q) in zip(a.traces, b.traces):
        np.testing.assert_allclose(tb_t, ta_t, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(tb_q, ta_q, rtol=RTOL, atol=ATOL)
    for name in ("issue_stats", "period_stats", "burst_issue_stats", "stall_stats"):
        sa, sb = getattr(a, name)().to_dict(), getattr(b, name)().to_dict()
        assert sa.keys() == sb.keys()
        for key in sa:
            np.testing.assert_allclose(sb[key], sa[key], rtol=RTOL, atol=ATOL, err_msg=f"{name}.{key}")
    np.testing.assert_allclose(b.drained_bytes, a.drained_bytes, rtol=RTOL, atol=ATOL)
    assert b.makespan_us == pytest.approx(a.makespan_us, rel=RTOL, abs=ATOL)
    assert b.engine == "fast" and a.engine == "simpy"


@SETTINGS
@given(config)
def test_random_workloads_equal(cfg):
    a, b = run_both(random_workload(cfg))
    assert_same(a, b)


gate = st.fixed_dictionaries({
    # 0, small, about a burst, larger than any occupancy; and anything in between
    "threshold": st.sampled_from([0.0, 0.0, 50.0, 600.0, 1e7]) | st.floats(0.0, 6000.0),
    "scope": st.sampled_from(["producer", "link", "fifo"]),
    "loads": st.sampled_from([True, True, True, False]),
})


# mostly without counters (random counters often deadlock, which tests nothing of the gate)
gated_config = config.map(lambda c: {**c, "counters": c["counters"] if c["seed"] % 4 == 0 else 0})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gated_config, gate)
def test_random_gated_workloads_identical(cfg, g):
    """With a random load gate (every scope) the engines agree bit for bit, not merely to 1e-9."""
    w = dataclasses.replace(random_workload(cfg), mainloop_loads=g["loads"],
                            load_gate=LoadGate(g["threshold"], g["scope"]))
    assert_bit_identical(*run_both(w))


def assert_bit_identical(a, b):
    """Both engines' results equal bit for bit (per-tile columns, q(t) traces), not merely to 1e-9."""
    assert_same(a, b)
    if not isinstance(a, str):
        for key, column in a.times.columns().items():
            assert np.array_equal(column, b.times.columns()[key], equal_nan=True), key
        for (at, aq), (bt, bq) in zip(a.traces, b.traces):
            assert np.array_equal(at, bt) and np.array_equal(aq, bq)


stall_gate = st.fixed_dictionaries({
    "threshold": st.sampled_from([0.0, 0.0, 50.0, 600.0, 1e7]) | st.floats(0.0, 6000.0),
    "scope": st.sampled_from(["producer", "link"]),
    "loads": st.sampled_from([True, True, True, False]),
})


# no counters, coupled through the X-Stage, one or two stages: about one draw in five pauses a
# running mainloop (with gated_config, one in twenty)
stall_config = config.map(lambda c: {**c, "counters": 0, "gpus": 1 + (c["gpus"] > 2), "coupling": "xstage"})


# derandomized: CI runs the same 300 draws every time (random draws once found an instant at which
# the gate chattered forever, fixed in e2ce20a and kept as test_stall_gate_at_the_threshold_does_not_chatter;
# to explore other draws, drop derandomize for a local run)
@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(stall_config | gated_config, stall_gate)
def test_random_stall_gated_workloads_identical(cfg, g):
    """With a random stall gate (mainloops paused while the occupancy is above the threshold, both
    scopes that have it) the engines agree bit for bit."""
    w = dataclasses.replace(random_workload(cfg), mainloop_loads=g["loads"],
                            load_gate=LoadGate(g["threshold"], g["scope"], "stall"))
    assert_bit_identical(*run_both(w))


def test_deadlock_reported_alike():
    cfg = {"streams": [[dict(mainloop=1.0, epilogue=0.0, bytes=100.0, t0=1.0, release=0.0, wait=0, value=5,
                             signal=-1, on_drain=False)]],
           "drain": 1000.0, "capacity": 500.0, "staging_depth": 2, "coupling": "xstage", "gpus": 1,
           "counters": 1, "seed": 0, "weights": False}
    a, b = run_both(random_workload(cfg))
    assert isinstance(a, str) and "deadlock" in a
    assert a == b


@pytest.mark.parametrize("sets", [
    [], ["aligned=false"], ["gap_us=0"], ["gap_us=20"], ["coupling=completion-coupled"],
    ["staging_depth=2", "aligned=false"], ["burst_bytes=4KB", "producers=7"],
])
def test_periodic_scenario_equal(sets):
    scenario = load_scenario("periodic").with_overrides(["producers=16", "bursts=40", "warmup_bursts=10"] + sets)
    platform = resolve_platform(None)
    a, b = run_both(scenario.build(platform))
    assert_same(a, b)
    assert scenario.summarize(a) == scenario.summarize(b)


@pytest.mark.parametrize("platform", [None, "paper-8gpu"])
@pytest.mark.parametrize("sets", [["aligned=false"], ["aligned=true"], ["gap_us=0", "burst_bytes=4KB"]])
def test_full_size_stage_equal(platform, sets):
    """132 producers (not a power of two: the fast engine's min-trees have leaves on two levels)
    on the measured arbitration weights and on equal ones (producers in phase)."""
    scenario = load_scenario("periodic").with_overrides(["producers=132", "bursts=12", "warmup_bursts=4"] + sets)
    a, b = run_both(scenario.build(resolve_platform(platform)))
    assert_same(a, b)


@pytest.mark.parametrize("burst", ["8KB", "48KB"])
def test_isolated_scenario_equal(burst):
    scenario = load_scenario("isolated").with_overrides([f"burst_bytes={burst}"])
    a, b = run_both(scenario.build(resolve_platform(None)))
    assert_same(a, b)


def test_without_trace():
    scenario = load_scenario("periodic").with_overrides(["producers=4", "bursts=10", "warmup_bursts=2"])
    w = scenario.build(resolve_platform(None))
    r = simulate(w, "fast", trace=False)
    assert r.traces == [None]
    np.testing.assert_array_equal(r.times.issue_end, simulate(w, "fast").times.issue_end)


def test_stall_gate_at_the_threshold_does_not_chatter():
    """A hypothesis draw that once looped forever at one instant: producer-scope stall gate of 0.5 B,
    a MIXED producer whose q sat 1.7e-12 B below it while rising, its crossing due at once. The gate's
    "at the threshold" includes a crossing due now (fluid.near_gate), so it stays closed: both engines
    finish, bit for bit alike."""
    tile = dict(epilogue=0.0, release=0.0, wait=-1, value=1, on_drain=True)
    cfg = {"drain": 1095.6924439194263, "gpus": 1, "staging_depth": 3, "coupling": "xstage", "weights": False,
           "capacity": 500.0, "counters": 0, "seed": 6834, "streams": [
               [{**tile, "mainloop": 1.7878623534783866, "t0": 0.7199333501095, "value": 2, "bytes": 2500.0, "signal": 1},
                {**tile, "mainloop": 0.5, "t0": 0.5, "epilogue": 0.2, "bytes": 2043.1897830046503, "signal": 1}],
               [{**tile, "mainloop": 2.0, "t0": 1.0, "value": 2, "wait": 0, "release": 1.5, "bytes": 0.0, "signal": 1},
                {**tile, "mainloop": 1.0, "t0": 0.5, "release": 4.0, "bytes": 2500.0, "signal": 2},
                {**tile, "mainloop": 0.5, "t0": 0.736184425981655, "value": 2, "on_drain": False, "wait": 1,
                 "bytes": 2468.188432204875, "release": 4.0, "signal": 0}]]}
    w = dataclasses.replace(random_workload(cfg), mainloop_loads=True, load_gate=LoadGate(0.5, "producer", "stall"))
    assert_bit_identical(*run_both(w))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config, st.integers(0, 2**16))
def test_random_capacity_shares_identical(cfg, seed):
    """Unequal per-producer capacity shares (``producer_capacity``): the engines agree bit for bit."""
    w = random_workload(cfg)
    factors = np.random.default_rng(seed).uniform(0.2, 3.0, w.n_producers)
    assert_bit_identical(*run_both(dataclasses.replace(w, producer_capacity=factors)))


def test_capacity_factor_one_is_the_equal_share():
    """Factors of exactly 1 give the same result as no factors, bit for bit."""
    cfg = {"streams": [[{"mainloop": 0.0, "epilogue": 0.0, "bytes": 2500.0, "t0": 0.5, "release": 0.0, "wait": -1,
                         "value": 1, "signal": -1, "on_drain": False}]] * 3,
           "drain": 1000.0, "capacity": 500.0, "staging_depth": 1, "coupling": "xstage", "gpus": 1,
           "counters": 0, "seed": 1, "weights": True}
    w = random_workload(cfg)
    for engine in ("simpy", "fast"):
        a = simulate(w, engine)
        b = simulate(dataclasses.replace(w, producer_capacity=np.ones(w.n_producers)), engine)
        assert np.array_equal(a.issue_us, b.issue_us) and a.makespan_us == b.makespan_us


def test_larger_capacity_share_issues_sooner():
    """Two equal producers, one holding 3x the other's share of Q: it is backpressured less."""
    cfg = {"streams": [[{"mainloop": 0.0, "epilogue": 0.0, "bytes": 2500.0, "t0": 0.5, "release": 0.0, "wait": -1,
                         "value": 1, "signal": -1, "on_drain": False}]] * 2,
           "drain": 1000.0, "capacity": 2000.0, "staging_depth": 1, "coupling": "xstage", "gpus": 1,
           "counters": 0, "seed": 1, "weights": False}
    w = dataclasses.replace(random_workload(cfg), producer_gpu=np.zeros(2, np.int64),
                            producer_capacity=np.array([1.5, 0.5]))
    for engine in ("simpy", "fast"):
        issue = simulate(w, engine).issue_us
        assert issue[0] < issue[1]
