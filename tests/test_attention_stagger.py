"""The design test's program stagger (xsim.attention.stagger)."""

import dataclasses

import pytest

from xsim.attention.stagger import design_stagger
from xsim.platform import resolve_platform
from xsim.units import drain_time_us


def test_host_link_wave_is_above_the_load_gate_so_the_design_staggers_by_v_over_r():
    p = resolve_platform("h200-pcie-host")
    d = design_stagger(p, 132, 32768)
    assert d.knee == "load gate" and d.knee_bytes == p.load_gate.threshold_bytes
    assert not d.aligned.capacity_bound_ok
    assert d.stagger_us == pytest.approx(drain_time_us(132 * 32768, p.drain_rate_gbps))
    assert 80 < d.stagger_us < 85                       # 4.33 MB at 52.4 GB/s
    assert d.to_dict()["aligned"]["ok"] is False


def test_a_wave_under_the_knee_needs_no_stagger_and_the_knee_is_the_capacity_without_a_gate():
    p = resolve_platform("paper-8gpu")
    d = design_stagger(p, 132, 32768)
    assert p.load_gate is None and d.knee == "capacity"
    assert d.aligned.capacity_bound_ok and d.stagger_us == 0.0
    host = resolve_platform("h200-pcie-host")
    small = design_stagger(host, 4, 32768)              # 128 kB: under the 329 kB gate
    assert small.stagger_us == 0.0


def test_the_gate_is_ignored_for_a_mainloop_that_does_not_load():
    p = resolve_platform("h200-pcie-host")
    d = design_stagger(p, 132, 32768, mainloop_loads=False)
    assert d.knee == "capacity" and d.knee_bytes == p.capacity_bytes(132)


def test_a_gate_above_the_capacity_leaves_the_capacity_as_the_knee():
    p = resolve_platform("h200-pcie-host")
    wide = dataclasses.replace(p, load_gate=dataclasses.replace(p.load_gate, threshold_bytes=1e12))
    assert design_stagger(wide, 132, 32768).knee == "capacity"


@pytest.mark.parametrize("programs, tile", [(0, 32768), (132, 0)])
def test_bad_input_is_one_clear_error(programs, tile):
    with pytest.raises(ValueError, match="programs"):
        design_stagger(resolve_platform("h200-pcie-host"), programs, tile)
