import numpy as np
import pytest

from hwkernels import timing

EPOCH_NS = 1_764_000_000_000_000_000   # %globaltimer counts ns since 1970


def synthetic(k=3, n=6, ghz=2.0, issue_cycles=400, period_cycles=1000, offsets=(0, 500, 900)):
    info = np.zeros((k, 8), dtype=np.int64)
    stamps = np.zeros((k, n, 4), dtype=np.int64)
    for p in range(k):
        clk0 = 10_000 * (p + 1)             # every SM's clock64 has its own origin
        info[p] = [EPOCH_NS + 7, clk0, EPOCH_NS + 7 + 100_000, clk0 + int(100_000 * ghz),
                   p + 10, 0, 0, 0]
        for j in range(n):
            start = clk0 + offsets[p] + j * period_cycles
            stamps[p, j, :2] = [start, start + issue_cycles]
    return stamps, info


def test_spans_and_global_alignment():
    stamps, info = synthetic()
    t = timing.burst_times(stamps, info)
    assert np.allclose(t.clock_ghz, 2.0)
    assert np.allclose(t.issue_us, 0.2)
    assert np.allclose(timing.period_samples(t, 1), 0.5)
    # producer 2 starts 900 cycles = 0.45 us after producer 0
    assert t.start_us[0, 0] == 0.0 and np.isclose(t.start_us[2, 0], 0.45)
    assert np.allclose(timing.burst_issue_samples(t, 2), 0.45 + 0.2)
    assert np.allclose(timing.gap_samples(t, 0), 0.3)
    assert timing.issue_samples(t, 2).size == 3 * 4
    assert timing.distinct_sms(t)


def test_epoch_scale_timer_keeps_ns_resolution():
    # regression: converting ~1.8e18 ns to float64 first rounds to 256 ns steps
    stamps, info = synthetic(offsets=(0, 3, 7))
    t = timing.burst_times(stamps, info)
    assert np.isclose(t.start_us[1, 0] - t.start_us[0, 0], 0.0015)


def test_bad_inputs():
    stamps, info = synthetic()
    with pytest.raises(ValueError, match="one row per producer"):
        timing.burst_times(stamps, info[:2])
    info[0, 2] = info[0, 0]
    with pytest.raises(ValueError, match="not increasing"):
        timing.burst_times(stamps, info)


def test_shared_sm_is_detected():
    stamps, info = synthetic()
    info[1, 4] = info[0, 4]
    assert not timing.distinct_sms(timing.burst_times(stamps, info))


def test_issue_max_is_the_slowest_producer_per_burst():
    stamps, info = synthetic(k=3, n=4)
    # producer 1's burst 2 takes 1000 cycles (0.5 us), producer 2's burst 3 takes 600 (0.3 us)
    stamps[1, 2, 1] = stamps[1, 2, 0] + 1000
    stamps[2, 3, 1] = stamps[2, 3, 0] + 600
    t = timing.burst_times(stamps, info)
    got = timing.issue_max_samples(t, 1)
    assert got.shape == (3,)                   # one sample per burst after the warm-up
    assert np.allclose(got, [0.2, 0.5, 0.3])
