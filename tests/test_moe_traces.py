"""xsim.moe.traces: the X-Stage rebuilt from a fused kernel's stamps, the waits before its mainloops, and the DES's
numbers on the same grid (synthetic stamps and a small DES run; no device)."""

from types import SimpleNamespace

import numpy as np
import pytest

from xsim.moe import traces


def test_the_queue_holds_what_entered_less_r_per_bin():
    st = np.array([[0, 0, 0, 0, 100, 100]])            # 2000 B in the first 100 ns bin, 100 B out per bin
    held, drained, t0 = traces.link_queue(st, np.array([2000]), rate_gbps=1.0)
    assert t0 == 0.0 and held[0] == pytest.approx(1900.0) and drained[:20].sum() == pytest.approx(2000.0)
    assert held[19:].sum() == 0.0


class _Npz(dict):
    """What np.load gives, as far as merged reads it."""

    @property
    def files(self):
        return list(self)


def test_merged_keeps_every_array_but_the_commit():
    host = _Npz({"commit": "x", "c|wave|host|stamps": 1, "c|int@3|host|stamps": 2, "c|wave|tiles": 4})
    local = _Npz({"commit": "y", "c|wave|local|stamps": 3, "c|wave|tiles": 4})
    merged = traces.merged([host, local])
    assert "commit" not in merged and len(merged) == 4
    assert traces.host_points(merged) == ["c|int@3", "c|wave"]


def test_the_rebuilt_queue_counts_only_the_kernel_span():
    # an L2 tile's mainloop at 0-500 ns, then 2000 B stored at 500-600 ns; the kernel ends at 2 us. At 1 B/ns the
    # link drains from 500 ns to 2.5 us: idle the first 5 of 20 bins, the stage above 1000 B for 9 bins
    st = np.array([[0, 0, 500, 500, 600, 2000]])
    r = traces.rebuilt(st, np.array([2000]), rate=1.0, gate=1000.0, kind=np.array([1]))
    assert r["span_us"] == pytest.approx(2.0) and r["above"] == pytest.approx(9 / 20)
    assert r["idle"] == pytest.approx(5 / 20) and r["l2_idle"] == pytest.approx(1.0)
    assert r["q_max"] == pytest.approx(1900.0)


def test_waits_split_an_l2_tile_s_wait_at_its_m_block_s_last_l1_tile():
    # L1 tile of m-block 0 ends at 5 us; the L2 tile starts at 2 us, its mainloop at 6 us: 3 us dependency, 1 us poll
    st = np.array([[0, 1000, 4000, 4000, 4000, 5000], [2000, 6000, 7000, 7000, 7500, 7500]])
    tiles = np.array([[0, 0, 0, 0], [1, 0, 0, 0]])
    pre, after, dep = traces.waits(st, tiles)
    assert pre.tolist() == [1.0] and after.tolist() == [1.0] and dep.tolist() == [3.0]


def test_running_counts_the_intervals_over_each_bin():
    assert traces.running(np.array([0.0, 0.25]), np.array([0.5, 1.0]), 10, 0.1).tolist() == \
        [1, 1, 2, 2, 2, 1, 1, 1, 1, 1]




def test_the_occupancy_series_bins_both_runs_on_one_grid():
    st = np.array([[0, 0, 0, 0, 100, 2000]])            # 2000 B stored in the first 100 ns, drained by 2 us
    result = SimpleNamespace(traces=[(np.array([0.0, 0.1, 2.1]), np.array([0.0, 2000.0, 0.0]))], makespan_us=3.0)
    t, measured, simulated = traces.occupancy_series(st, np.array([2000]), 1.0, result, bin_us=1.0)
    assert t.tolist() == [0.0, 1.0, 2.0]                # the longer run: the DES's 3 us
    assert measured[0] == pytest.approx(np.mean(1900.0 - 100.0 * np.arange(10))) and measured[2] == 0.0
    assert simulated[0] > simulated[1] > simulated[2] > 0.0
