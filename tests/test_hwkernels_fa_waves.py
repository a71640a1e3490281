"""hwkernels.fa_waves: the within-wave spread from stamps (CPU, synthetic stamps)."""

import numpy as np
import pytest

from hwkernels.fa_waves import main, wave_stats


def _stamps(qloop_ns: np.ndarray, start_offset_ns: np.ndarray, ghz: float = 1.5) -> np.ndarray:
    """Stamps of waves x programs tiles: tile (w, p) starts at w * 1000 ns + offset[p], its Q-loop
    takes qloop_ns[w, p], its stores 10 ns; %clock64 = ns * ghz."""
    waves, programs = qloop_ns.shape
    st = np.zeros((waves * programs, 6), dtype=np.int64)
    for w in range(waves):
        for p in range(programs):
            t0 = w * 1000 + start_offset_ns[p]
            t1 = t0 + qloop_ns[w, p]
            ns = np.array([t0, t1, t1 + 10])
            st[w * programs + p] = np.concatenate([ns, np.round(ns * ghz)])
    return st


def test_common_drift_is_not_within_wave_spread():
    programs = 8
    drift = np.array([400.0, 500.0, 600.0])[:, None] * np.ones((1, programs))   # every SM at once
    s = wave_stats(_stamps(drift, np.zeros(programs)), programs)
    assert s["waves"] == 3 and s["clock_mhz"] == pytest.approx(1500, rel=1e-3)
    assert s["wave_p90_over_mean"] - s["wave_p10_over_mean"] == pytest.approx(0, abs=1e-3)
    assert s["all_p90_over_mean"] - s["all_p10_over_mean"] > 0.3      # what the launch-wide cv sees
    assert s["wave_means_cv"] == pytest.approx(np.std([400, 500, 600]) / 500, rel=1e-2)
    assert s["start_skew_us"] == pytest.approx(0, abs=1e-3)


def test_within_wave_spread_and_start_skew():
    programs = 10
    q = np.tile(np.linspace(450.0, 550.0, programs), (4, 1))
    offs = np.linspace(0.0, 90.0, programs)
    s = wave_stats(_stamps(q, offs), programs)
    want = (np.percentile(q[0], 90) - np.percentile(q[0], 10)) / q[0].mean()
    assert s["wave_p90_over_mean"] - s["wave_p10_over_mean"] == pytest.approx(want, rel=1e-2)
    assert s["start_skew_us"] == pytest.approx((np.percentile(offs, 90) - np.percentile(offs, 10)) / 1e3, rel=1e-2)
    assert s["wave_means_cv"] == pytest.approx(0, abs=1e-6)
    assert s["start_skew_us_first"] == pytest.approx(s["start_skew_us"]) == s["start_skew_us_last"]
    assert s["phase_kept"] == pytest.approx(1.0)


def test_staggered_programs_that_fall_back_into_step():
    """A stagger in the first wave only (the next waves start together): the first wave's skew,
    none in the last, no phase kept; phases that move to another order correlate below 1."""
    programs, waves = 10, 4
    st = _stamps(np.full((waves, programs), 500.0), np.zeros(programs))
    offs = np.linspace(0.0, 90.0, programs).astype(np.int64)
    st[:programs, [0, 1, 2]] += offs[:, None]                         # wave 0 staggered
    st[:programs, [3, 4, 5]] += np.round(offs * 1.5).astype(np.int64)[:, None]
    s = wave_stats(st, programs)
    assert s["start_skew_us_first"] > 0.05 and s["start_skew_us_last"] == pytest.approx(0, abs=1e-6)
    assert s["phase_kept"] is None                                   # no skew left to correlate
    rev = _stamps(np.full((waves, programs), 500.0), np.linspace(0.0, 90.0, programs))
    rev[-programs:, [0, 1, 2]] = rev[-programs:, [0, 1, 2]][::-1]   # the last wave in reverse order
    rev[-programs:, [3, 4, 5]] = rev[-programs:, [3, 4, 5]][::-1]
    assert wave_stats(rev, programs)["phase_kept"] == pytest.approx(-1.0)


def test_partial_last_wave_is_left_out_and_bad_stamps_refused():
    programs = 4
    st = _stamps(np.full((2, programs), 500.0), np.zeros(programs))
    extra = np.concatenate([st, st[:2] + 5000])                     # 2 tiles of a third wave
    assert wave_stats(extra, programs)["waves"] == 2
    with pytest.raises(ValueError, match="no full wave"):
        wave_stats(st[:3], programs)
    with pytest.raises(ValueError, match="not increasing"):
        wave_stats(np.zeros_like(st), programs)


def test_bad_arguments_are_exit_2(tmp_path, capsys):
    pytest.importorskip("torch")
    assert main(["--out", str(tmp_path), "--runs", "0"]) == 2
    assert main(["--out", str(tmp_path), "--seq-lens", "abc"]) == 2
    assert main(["--out", str(tmp_path), "--stagger-us", "soon"]) == 2
    assert main(["--out", str(tmp_path), "--stagger-us", "50", "--mainloop", "triton"]) == 2
    assert capsys.readouterr().err.count("\n") == 4
