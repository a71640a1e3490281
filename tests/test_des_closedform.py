"""The DES reproduces the closed form where the closed form is exact (within 2%)."""

import pytest

from xsim.closedform import isolated_burst, steady_state
from xsim.des import simulate
from xsim.platform import resolve_platform
from xsim.scenario import load_scenario

PAPER = resolve_platform("paper-8gpu")
K, B = 148, 32 * 1024
V = K * B
T0 = PAPER.t_iss0_us(K, B)
G_STAR = steady_state(V, 0.0, T0, PAPER.drain_rate_gbps).g_star_us  # ~6.0 us


def _run(name, **params):
    base = {"producers": K, "burst_bytes": B, "aligned": "false"}
    scenario = load_scenario(name).with_overrides([f"{k}={v}" for k, v in {**base, **params}.items()])
    return scenario.summarize(simulate(scenario.build(PAPER)))


@pytest.mark.parametrize("gap_fraction", [0.0, 0.25, 0.5, 0.8, 0.9, 0.97, 1.03, 1.1, 1.5, 2.5])
def test_periodic_steady_state(gap_fraction):
    gap = gap_fraction * G_STAR
    out = _run("periodic", gap_us=gap, bursts=160, warmup_bursts=120)
    expected = steady_state(V, gap, T0, PAPER.drain_rate_gbps, PAPER.capacity_bytes(K))
    assert out["period_us"]["mean"] == pytest.approx(expected.t_period_us, rel=0.02)
    assert out["issue_us"]["mean"] == pytest.approx(expected.t_issue_us, rel=0.02)


@pytest.mark.parametrize("burst_kib", [8, 24, 31, 33, 35, 48, 96])
def test_isolated_issue_on_both_sides_of_the_knee(burst_kib):
    b = burst_kib * 1024
    out = _run("isolated", burst_bytes=b, bursts=3)
    expected = isolated_burst(K * b, PAPER.t_iss0_us(K, b), PAPER.drain_rate_gbps, PAPER.capacity_bytes(K))
    assert out["issue_us"]["mean"] == pytest.approx(expected.t_issue_isolated_us, rel=0.02)


@pytest.mark.parametrize("gap_us", [0.0, 2.0, 8.0])
def test_completion_coupled_period_is_gap_plus_drain(gap_us):
    out = _run("periodic", gap_us=gap_us, coupling="completion-coupled", bursts=40, warmup_bursts=5)
    assert out["period_us"]["mean"] == pytest.approx(gap_us + V / 717_000, rel=0.02)
