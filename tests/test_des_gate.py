"""The load gate in the DES (xsim.des.gate): hand-computed cases and its limits, on both engines."""

import dataclasses
import math

import numpy as np
import pytest

from helpers import workload
from xsim.des import simulate
from xsim.load_gate import LoadGate
from xsim.platform import resolve_platform
from xsim.scenario import load_scenario

ENGINES = ("simpy", "fast")


def gated(w, threshold_bytes, scope="producer", loads=True):
    return dataclasses.replace(w, mainloop_loads=loads, load_gate=LoadGate(threshold_bytes, scope))


def assert_identical(a, b):
    """Per-tile tables, q(t) traces and drained bytes equal bit for bit."""
    ta, tb = a.times.columns(), b.times.columns()
    for key in ta:
        assert np.array_equal(ta[key], tb[key], equal_nan=True), key
    for (at, aq), (bt, bq) in zip(a.traces, b.traces):
        assert np.array_equal(at, bt) and np.array_equal(aq, bq)
    assert a.drained_bytes == b.drained_bytes


def two_producers():
    """Drain 1000 B/us, no backpressure. Both mainloops end at 1 us; P0 issues 2000 B and P1 1000 B
    in 0.5 us while each drains 500 B/us (fair share): at 1.5 us q0 = 1750, q1 = 750 (total 2500).
    Then both drain at 500 B/us: q1 empties at 3.0; q0 alone drains at 1000 B/us, empty at 4.0.
    The total falls at 1000 B/us throughout. Each producer's second mainloop (S = 0: the slot is
    free at issue end, 1.5 us) loads memory."""
    streams = [[dict(mainloop=1.0, bytes=2000.0, t0=0.5), dict(mainloop=1.0)],
               [dict(mainloop=1.0, bytes=1000.0, t0=0.5), dict(mainloop=1.0)]]
    return workload(streams, drain=1000.0, capacity=1e7, staging_depth=0)


@pytest.mark.parametrize("engine", ENGINES)
def test_two_producers_link_scope_by_hand(engine):
    """Link scope, 1500 B: the total 2500 B reaches 1500 B at 1.5 + 1000 / 1000 = 2.5 us; both wait 1 us."""
    r = simulate(gated(two_producers(), 1500.0, "link"), engine)
    t = r.times
    np.testing.assert_allclose(t.issue_end[[0, 2]], 1.5)
    np.testing.assert_allclose(t.mainloop_start[[1, 3]], 2.5, rtol=1e-12)
    np.testing.assert_allclose(t.gate_wait_us[[1, 3]], 1.0, rtol=1e-12)
    np.testing.assert_allclose(t.stall_us[[1, 3]], 1.5, rtol=1e-12)   # slot (0.5 us) and gate: both stall
    assert t.gate_wait_us[0] == t.gate_wait_us[2] == 0.0             # first mainloops: an empty stage
    np.testing.assert_allclose(t.drain_end[[0, 2]], [4.0, 3.0], rtol=1e-12)
    # across the kink at 3.0 us (q1 empties) the total still falls at 1000 B/us: 500 B at 3.5 us
    r = simulate(gated(two_producers(), 500.0, "link"), engine)
    np.testing.assert_allclose(r.times.mainloop_start[[1, 3]], 3.5, rtol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_two_producers_producer_scope_by_hand(engine):
    """Producer scope, 1500 B: P0's own 1750 B fall to 1500 B at 1.5 + 250 / 500 = 2.0 us; P1's 750 B
    are already below: it starts at its issue end."""
    t = simulate(gated(two_producers(), 1500.0), engine).times
    np.testing.assert_allclose(t.mainloop_start[[1, 3]], [2.0, 1.5], rtol=1e-12)
    np.testing.assert_allclose(t.gate_wait_us[[1, 3]], [0.5, 0.0], atol=1e-12)
    # 500 B: P1 at 1.5 + 250 / 500 = 2.0; P0 holds 1000 B at 3.0 us, then drains alone at 1000 B/us
    t = simulate(gated(two_producers(), 500.0), engine).times
    np.testing.assert_allclose(t.mainloop_start[[1, 3]], [3.5, 2.0], rtol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("depth", [0, 1])
def test_threshold_zero_waits_for_own_stores(engine, depth):
    """Scope producer, threshold 0, one producer: each mainloop after a remote tile starts exactly
    when that tile's stores have drained (the slot is free at its issue end, before the drain)."""
    rng = np.random.default_rng(3)
    streams = [[dict(mainloop=float(m), bytes=float(b), t0=float(t)) for m, b, t in
                zip(rng.uniform(0.1, 2.0, 12), rng.uniform(200.0, 3000.0, 12), rng.uniform(0.2, 1.0, 12))]]
    t = simulate(gated(workload(streams, drain=700.0, capacity=800.0, staging_depth=depth), 0.0), engine).times
    assert np.sum(t.drain_end[:-1] > t.issue_end[:-1]) >= 8   # most mainloops wait (the others: stores passed through)
    np.testing.assert_allclose(t.mainloop_start[1:], t.drain_end[:-1], rtol=1e-12, atol=0)
    np.testing.assert_allclose(t.gate_wait_us[1:], t.drain_end[:-1] - t.issue_end[:-1], rtol=1e-9)


def mixed_streams():
    rng = np.random.default_rng(7)
    return [[dict(mainloop=float(rng.choice([0.0, 0.3, 1.2])), bytes=float(rng.choice([0.0, 400.0, 2500.0])),
                  t0=float(rng.uniform(0.2, 1.5)), epilogue=float(rng.choice([0.0, 0.2])))
             for _ in range(8)] for _ in range(5)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("scope", ["producer", "link", "fifo"])
@pytest.mark.parametrize("depth", [0, 2])
def test_no_wait_above_any_occupancy_equals_no_gate(engine, scope, depth):
    """A threshold at or above any occupancy (the stage's capacity) never holds a mainloop, and an
    infinite one is today's model: both equal the run without a gate bit for bit (a check that
    passes moves nothing); so does a gate on a workload whose mainloops do not load."""
    w = workload(mixed_streams(), drain=900.0, capacity=3000.0, staging_depth=depth, gpus=[0, 1, 0, 1, 0],
                 n_xstages=2)
    base = simulate(w, engine)
    for other in (gated(w, 3000.0, scope), gated(w, math.inf, scope), gated(w, 0.0, scope, loads=False)):
        r = simulate(other, engine)
        assert np.all(r.times.gate_wait_us == 0.0)
        assert_identical(base, r)
    held = simulate(gated(w, 0.0, scope), engine)
    assert held.times.gate_wait_us.max() > 0   # a threshold of 0 does hold mainloops here


def test_completion_coupled_is_unaffected():
    w = workload(mixed_streams(), drain=900.0, capacity=3000.0, coupling="completion-coupled")
    assert_identical(simulate(w, "fast"), simulate(gated(w, 0.0, "link"), "fast"))
    assert_identical(simulate(w, "fast"), simulate(gated(w, 0.0, "fifo"), "fast"))


def late_injector():
    """Drain 1000 B/us, no backpressure. A issues 3000 B in [1.0, 1.5] (alone: 500 B drain), so at
    1.5 the stage holds 2500 B and its second mainloop (S = 0) waits. B issues 2000 B in [2.0, 2.5]
    while A waits: the total q falls to 2000 B at 2.0, rises to 3500 B at 2.5, then falls at
    1000 B/us (the drain is busy throughout: D grows at 1000 B/us from 500 B at 1.5)."""
    streams = [[dict(mainloop=1.0, bytes=3000.0, t0=0.5), dict(mainloop=1.0)],
               [dict(mainloop=2.0, bytes=2000.0, t0=0.5), dict(mainloop=1.0)]]
    return workload(streams, drain=1000.0, capacity=1e7, staging_depth=0)


@pytest.mark.parametrize("engine", ENGINES)
def test_fifo_ignores_bytes_accepted_later_by_hand(engine):
    """Threshold 500 B. fifo: A waits for the 2500 B ahead of it less 500 B: (2500 - 500) / 1000 =
    2.0 us (D reaches A(1.5) - 500 = 2500 B at 3.5); link: for the total q, B's bytes included, to
    fall to 500 B: 5.5 us, 4.0 us. B itself waits at 2.5 with nothing accepted after it: both
    scopes (3500 - 500) / 1000 = 3.0 us."""
    fifo = simulate(gated(late_injector(), 500.0, "fifo"), engine).times
    link = simulate(gated(late_injector(), 500.0, "link"), engine).times
    np.testing.assert_allclose(fifo.issue_end[[0, 2]], [1.5, 2.5], rtol=1e-12)
    np.testing.assert_allclose(fifo.gate_wait_us[[1, 3]], [(2500.0 - 500.0) / 1000.0, 3.0], rtol=1e-12)
    np.testing.assert_allclose(fifo.mainloop_start[[1, 3]], [3.5, 5.5], rtol=1e-12)
    np.testing.assert_allclose(link.gate_wait_us[[1, 3]], [4.0, 3.0], rtol=1e-12)
    assert link.gate_wait_us[1] > fifo.gate_wait_us[1]
    assert fifo.gate_wait_us[3] == link.gate_wait_us[3]
    # a threshold at what is ahead of A (2500 B) lets it start at once; B still waits for 3500 - 2500
    t = simulate(gated(late_injector(), 2500.0, "fifo"), engine).times
    assert t.gate_wait_us[1] == 0.0 and t.mainloop_start[1] == t.issue_end[0]
    np.testing.assert_allclose(t.gate_wait_us[3], 1.0, rtol=1e-12)
    # at or above everything ahead of either: the run without a gate, bit for bit
    r = simulate(gated(late_injector(), 3500.0, "fifo"), engine)
    assert np.all(r.times.gate_wait_us == 0.0)
    assert_identical(simulate(late_injector(), engine), r)


def single_burst(depth):
    """Six producers on two stages, unequal weights, one burst each with the same issue end
    (mainloop 1 us, T_iss0 0.5 us, no backpressure), then mainloops that load and store nothing:
    nothing is accepted after the first mainloop waits."""
    rng = np.random.default_rng(11)
    streams = [[dict(mainloop=1.0, bytes=float(rng.uniform(500.0, 4000.0)), t0=0.5)]
               + [dict(mainloop=float(m)) for m in rng.uniform(0.2, 1.5, 3)] for _ in range(6)]
    return workload(streams, drain=800.0, capacity=1e7, staging_depth=depth, gpus=[0, 1, 0, 1, 0, 0],
                    n_xstages=2, weights=rng.uniform(0.5, 2.0, 6))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("depth", [0, 1])
@pytest.mark.parametrize("threshold", [0.0, 700.0, 3000.0])
def test_fifo_equals_link_without_later_injection(engine, depth, threshold):
    """With nothing accepted after a mainloop begins to wait, what is ahead of it is the stage's
    total q: fifo scope is link scope, bit for bit (same waits, same everything)."""
    w = single_burst(depth)
    fifo, link = simulate(gated(w, threshold, "fifo"), engine), simulate(gated(w, threshold, "link"), engine)
    assert np.sum(fifo.times.gate_wait_us > 0) >= 4   # the gate holds mainloops here
    assert_identical(fifo, link)


def test_zero_length_mainloops_do_not_wait():
    """A zero-time tile (a fence) loads nothing: the gate holds only mainloops with time."""
    streams = [[dict(mainloop=1.0, bytes=2000.0, t0=0.5), dict(mainloop=0.0), dict(mainloop=1.0)]]
    t = simulate(gated(workload(streams, drain=1000.0, capacity=1e6, staging_depth=0), 0.0), "fast").times
    assert t.gate_wait_us[1] == 0.0 and t.mainloop_start[1] == t.issue_end[0]
    np.testing.assert_allclose(t.mainloop_start[2], t.drain_end[0], rtol=1e-12)


def test_per_tile_table_has_gate_wait():
    r = simulate(gated(two_producers(), 1500.0, "link"), "fast")
    table = r.table()
    assert "gate_wait_us" in table
    np.testing.assert_array_equal(table["gate_wait_us"], r.times.gate_wait_us)
    assert np.all(simulate(two_producers(), "fast").table()["gate_wait_us"] == 0.0)


@pytest.mark.parametrize("scope, threshold", [("producer", 0.0), ("producer", 8192.0), ("link", 0.0),
                                              ("link", 300_000.0), ("fifo", 322_400.0)])
def test_builders_use_the_platform_gate(scope, threshold):
    """MoE and FA+A2A mainloops load memory: the platform's gate holds them, the engines agree bit
    for bit on the full-size workloads."""
    platform = dataclasses.replace(resolve_platform("h200-pcie-host"), load_gate=LoadGate(threshold, scope))
    for name, sets in (("fa-a2a-host", ["seq_len=2048", "replays=2"]),
                       ("moe1-qwen3-30b-fp8-balanced-4096", ["schedule=interleaved"])):
        w = load_scenario(name).with_overrides(sets).build(platform)
        assert w.mainloop_loads and w.gate == platform.load_gate
        a, b = simulate(w, "simpy"), simulate(w, "fast")
        assert_identical(a, b)
        assert a.times.gate_wait_us.max() > 0


# ---- mode stall: a running mainloop is paused while the occupancy is above the threshold -----------

def stalled(w, threshold_bytes, scope="link", loads=True):
    return dataclasses.replace(w, mainloop_loads=loads, load_gate=LoadGate(threshold_bytes, scope, "stall"))


def burst_during_a_load(t0=0.5):
    """Drain R = 1000 B/us, no backpressure. Producer 0 loads for 10 us from t = 0 (nothing in the
    stage: it starts at once); producer 1, on the same stage, spins 2 us then issues V = 5000 B in
    ``t0`` us (r = V / t0) while the stage drains at R: q rises at r - R to V - R t0 at 2 + t0, then
    falls at R."""
    streams = [[dict(mainloop=10.0)], [dict(mainloop=0.0, epilogue=2.0, bytes=5000.0, t0=t0)]]
    return workload(streams, drain=1000.0, capacity=1e7, staging_depth=0)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("t0", [0.5, 0.01])
def test_stall_pauses_a_running_load_by_hand(engine, t0):
    """G = 2000 B, link scope. q rises above G at 2 + G / (r - R) and falls back to it at
    2 + t0 + (V - R t0 - G) / R = 2 + (V - G) / R: the load is paused for (V - G) / R less the rise,
    G t0 / (V - R t0) (-> (V - G) / R = 3 us for an instant burst), its 10 us of work end that much
    later, and the pause is its gate wait and stall. The start gate never holds it (it started
    before the burst)."""
    v, g, rate = 5000.0, 2000.0, 1000.0
    paused = (v - g) / rate - g * t0 / (v - rate * t0)
    t = simulate(stalled(burst_during_a_load(t0), g), engine).times
    np.testing.assert_allclose(t.mainloop_start[0], 0.0)
    np.testing.assert_allclose(t.mainloop_end[0], 10.0 + paused, rtol=1e-12)
    np.testing.assert_allclose([t.gate_wait_us[0], t.stall_us[0]], paused, rtol=1e-12)
    assert t.gate_wait_us[1] == 0.0   # a tile without mainloop time is never gated
    start = simulate(dataclasses.replace(stalled(burst_during_a_load(t0), g), load_gate=LoadGate(g, "link")),
                     engine).times
    assert start.mainloop_end[0] == 10.0 and start.gate_wait_us[0] == 0.0
    # a burst whose peak V - R t0 stays at or below G pauses nothing: the run without a gate
    assert_identical(simulate(burst_during_a_load(t0), engine),
                     simulate(stalled(burst_during_a_load(t0), v - rate * t0 + 1.0), engine))


@pytest.mark.parametrize("engine", ENGINES)
def test_stall_producer_scope_own_stores_by_hand(engine):
    """Producer scope, 2 staging slots: the issuer stores tile 0's 3000 B (t0 = 1 us, drain 1000 B/us:
    q rises at 2000 B/us) while tile 1's mainloop (loads, 5 us) runs from t = 1. G = 1000 B: q passes
    G at 1.5, peaks at 2000 B at 2.0, falls back to G at 3.0: tile 1 is paused 1.5 us."""
    streams = [[dict(mainloop=1.0, bytes=3000.0, t0=1.0), dict(mainloop=5.0)]]
    w = workload(streams, drain=1000.0, capacity=1e7, staging_depth=2)
    t = simulate(stalled(w, 1000.0, "producer"), engine).times
    np.testing.assert_allclose(t.mainloop_start[1], 1.0)
    np.testing.assert_allclose(t.gate_wait_us[1], 1.5, rtol=1e-12)
    np.testing.assert_allclose(t.mainloop_end[1], 7.5, rtol=1e-12)
    assert simulate(gated(w, 1000.0, "producer"), engine).times.mainloop_end[1] == 6.0   # start: never held


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("depth", [0, 1])
@pytest.mark.parametrize("threshold", [0.0, 700.0, 3000.0])
@pytest.mark.parametrize("scope", ["link", "producer"])
def test_stall_equals_start_when_nothing_is_stored_during_a_load(engine, depth, threshold, scope):
    """With nothing accepted once the loads begin (every burst ends first, the occupancy only falls)
    no running mainloop is ever paused: stall is the start gate, bit for bit."""
    w = single_burst(depth)
    a, b = simulate(stalled(w, threshold, scope), engine), simulate(gated(w, threshold, scope), engine)
    assert np.sum(a.times.gate_wait_us > 0) >= 2   # the gate holds mainloops before they start
    assert_identical(a, b)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("scope", ["producer", "link"])
@pytest.mark.parametrize("depth", [0, 2])
def test_stall_above_any_occupancy_equals_no_gate(engine, scope, depth):
    """A stall threshold no occupancy reaches pauses nothing and moves nothing: the run without a
    gate bit for bit (so does a stall gate on mainloops that do not load); a threshold of 0 holds
    mainloops, and a held mainloop spans at least its work."""
    w = workload(mixed_streams(), drain=900.0, capacity=3000.0, staging_depth=depth, gpus=[0, 1, 0, 1, 0],
                 n_xstages=2)
    base = simulate(w, engine)
    for other in (stalled(w, 1e7, scope), stalled(w, 0.0, scope, loads=False)):
        r = simulate(other, engine)
        assert np.all(r.times.gate_wait_us == 0.0)
        assert_identical(base, r)
    held = simulate(stalled(w, 0.0, scope), engine).times
    assert held.gate_wait_us.sum() > 0 and np.all(held.gate_wait_us >= 0.0)
    span = held.mainloop_end - held.mainloop_start   # its work, and any pause while it ran
    assert np.all(span >= w.mainloop_us * (1 - 1e-12)) and np.all(held.stall_us >= held.gate_wait_us)


@pytest.mark.parametrize("scope, threshold", [("producer", 8192.0), ("link", 329_500.0)])
def test_builders_with_a_stall_gate(scope, threshold):
    """Full-size MoE and FA+A2A workloads with a stall gate: the engines agree bit for bit."""
    platform = dataclasses.replace(resolve_platform("h200-pcie-host"), load_gate=LoadGate(threshold, scope, "stall"))
    for name, sets in (("fa-a2a-host", ["seq_len=2048", "replays=2"]),
                       ("moe1-qwen3-30b-fp8-balanced-4096", ["schedule=interleaved"])):
        w = load_scenario(name).with_overrides(sets).build(platform)
        assert w.gate == platform.load_gate
        assert_identical(simulate(w, "simpy"), simulate(w, "fast"))


def test_stall_many_pauses_of_long_loads():
    """40 loads of 200 us work on one stage while another producer issues 4000 B bursts (0.1 us each)
    every 4.1 us (drain 1000 B/us, G = 2000 B): each burst drains before the next and pauses every
    load for 2.0 - 2000 x 0.1 / 3900 us (the hand case's formula), so each load's wait is a whole
    number of those pauses. About 40 pauses per load: the fast engine drops each paused load's
    pending end from its queue (a stale end per pause would overflow it), and equals SimPy bit for bit."""
    streams = [[dict(mainloop=200.0)] for _ in range(40)] + \
        [[dict(mainloop=0.0, epilogue=4.0, bytes=4000.0, t0=0.1) for _ in range(80)]]
    w = stalled(workload(streams, drain=1000.0, capacity=1e7, staging_depth=0), 2000.0)
    a, b = simulate(w, "simpy"), simulate(w, "fast")
    assert_identical(a, b)
    pauses = b.times.gate_wait_us[:40] / (2.0 - 2000.0 * 0.1 / 3900.0)
    assert pauses.min() > 30
    np.testing.assert_allclose(pauses, np.round(pauses), atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_fifo_link_is_the_fence_then_the_link_gate_by_hand(engine):
    """fifo-link: the fifo target at 0 (the fence), then the link gate. Threshold 500 B: A's fence
    ends when D reaches A(1.5) = 3000 B, at 4.0; the total q is then 3500 - 1500 = 2000 B > 500, so
    it waits on at the link gate until 5.5 (as link scope alone); B's fence ends at 2.5 + 3500 / 1000
    = 6.0 with the stage empty (link alone: 5.5). At 2500 B the link gate is open when A's fence
    ends: 4.0, the fence alone; an infinite threshold is the fifo fence at 0."""
    for threshold, starts in ((500.0, [5.5, 6.0]), (2500.0, [4.0, 6.0]), (math.inf, [4.0, 6.0])):
        t = simulate(gated(late_injector(), threshold, "fifo-link"), engine).times
        np.testing.assert_allclose(t.mainloop_start[[1, 3]], starts, rtol=1e-12)
        np.testing.assert_allclose(t.gate_wait_us[[1, 3]], np.subtract(starts, [1.5, 2.5]), rtol=1e-12)


@pytest.mark.parametrize("threshold", [0.0, 300.0, 1200.0, math.inf])
def test_fifo_link_engines_agree_and_inf_is_the_fifo_fence(threshold):
    """Both engines bit for bit on two stages of mixed tiles; at an infinite threshold fifo-link
    is the fifo gate at 0 (a fifo-link gate is never open: the workload keeps it)."""
    w = workload(mixed_streams(), drain=900.0, capacity=3000.0, staging_depth=0, gpus=[0, 1, 0, 1, 0],
                 n_xstages=2)
    fast = simulate(gated(w, threshold, "fifo-link"), "fast")
    assert_identical(simulate(gated(w, threshold, "fifo-link"), "simpy"), fast)
    assert fast.times.gate_wait_us.max() > 0
    if threshold == math.inf:
        assert gated(w, threshold, "fifo-link").gate is not None
        assert_identical(simulate(gated(w, 0.0, "fifo"), "fast"), fast)


def test_fifo_link_has_no_stall_mode():
    with pytest.raises(ValueError, match='"mode" stall needs scope producer or link'):
        LoadGate(1.0, "fifo-link", "stall")
