"""fa_bench --stagger-us: a number or the design test's stagger (hwkernels.fa_stagger)."""

import pytest

from hwkernels.fa_stagger import design_config, stagger_number
from hwkernels.fa_variants import KernelConfig
from xsim.attention.stagger import design_stagger
from xsim.platform import resolve_platform


def test_a_number_or_design():
    assert stagger_number("82.5") == 82.5 and stagger_number("0") == 0.0
    assert stagger_number("design") == 0.0
    with pytest.raises(ValueError, match="a number of microseconds or 'design'"):
        stagger_number("fast")


def test_design_config_carries_the_profiles_stagger_and_says_where_it_came_from():
    cfg, rule = design_config(KernelConfig(mainloop="gluon"), "host", "", 132, 128, 128, 4)
    expect = design_stagger(resolve_platform("h200-pcie-host"), 132, 32768).stagger_us
    assert cfg.stagger_us == round(expect, 1) and 80 < cfg.stagger_us < 85
    assert rule == {"stagger_rule": "design:h200-pcie-host", "stagger_knee": "load gate",
                    "stagger_knee_bytes": 328900.0}
    assert cfg.num_warps == KernelConfig(mainloop="gluon").num_warps     # nothing else moves


def test_design_on_a_platform_whose_wave_fits_runs_unstaggered():
    cfg, _ = design_config(KernelConfig(mainloop="gluon"), "peer", "paper-8gpu", 132, 128, 128, 8)
    assert cfg.stagger_us == 0.0


@pytest.mark.parametrize("argv, message", [
    (["--stagger-us", "soon", "--mainloop", "gluon"], "a number of microseconds or 'design'"),
    (["--stagger-us", "design"], "--stagger-us design needs --mainloop gluon"),
    (["--stagger-us", "design", "--mainloop", "gluon", "--profile", "no-such-gpu"], "unknown platform")])
def test_bad_stagger_options_exit_2_with_one_line(argv, message, capsys):
    pytest.importorskip("torch")
    from hwkernels import fa_bench

    assert fa_bench.main(["--out", "/nonexistent/x.jsonl", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
