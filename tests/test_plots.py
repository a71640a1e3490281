"""Plots of one simulation: the timeline's producer menu, and spans drawn only where they last."""

import pytest

from xsim.des import simulate
from xsim.platform import resolve_platform
from xsim.plots import producer_groups, timeline_figure
from xsim.scenario import load_scenario


@pytest.fixture(scope="module")
def result():
    scenario = load_scenario("periodic").with_overrides(["producers=40", "bursts=6", "warmup_bursts=1"])
    return simulate(scenario.build(resolve_platform("paper-8gpu")), engine="simpy", trace=True)


def test_producer_groups():
    assert producer_groups(40, 16) == [range(0, 16), range(16, 32), range(32, 40)]
    assert producer_groups(3, 16) == [range(0, 3)]
    with pytest.raises(ValueError, match='"group_size" must be >= 1'):
        producer_groups(3, 0)


def test_timeline_menu_shows_one_group_of_producers_at_a_time(result):
    fig = timeline_figure(result, group_size=16)
    assert len(fig.data) == 3 * 3  # three groups x (mainloop, issue, post-issue drain)
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == ["producers P0–P15", "producers P16–P31", "producers P32–P39"]
    visible = buttons[2].args[0]["visible"]
    assert visible == [False] * 6 + [True] * 3 and buttons[2].args[1]["yaxis.range"] == [39.5, 31.5]
    assert [t.visible for t in fig.data] == [True] * 3 + [False] * 6
    issue = fig.data[1]
    assert set(issue.y) <= set(range(16)) and len(issue.y) == 16 * 6  # one bar per (producer, burst)
    assert min(issue.x) > 0  # zero-length spans (gap tiles issue nothing) are left out


def test_timeline_without_a_menu_when_few_producers(result):
    fig = timeline_figure(result, group_size=64)
    assert len(fig.data) == 3 and not fig.layout.updatemenus
