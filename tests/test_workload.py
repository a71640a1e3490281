"""The workload contract: checked arrays with SimPy-style messages, derived columns, defaults."""

import numpy as np
import pytest

from helpers import workload
from xsim.workload import Workload, XStageParams

STREAMS = [[{"bytes": 100.0}, {"mainloop": 1.0}], [{"bytes": 200.0}]]


def test_streams_are_stored_producer_by_producer():
    w = workload(STREAMS)
    assert w.n_producers == 2 and w.n_tiles == 3
    assert list(w.producer) == [0, 0, 1]
    assert list(w.burst_index) == [0, 1, 0]  # left out: the tile's position in its stream
    assert not w.signal_on_drain.any() and list(w.producer_weight) == [1.0, 1.0]


@pytest.mark.parametrize("depth, slots", [(0, 1), (1, 1), (3, 3)])
def test_staging_depth_zero_times_like_one_slot(depth, slots):
    assert workload(STREAMS, staging_depth=depth).slots == slots


@pytest.mark.parametrize("change, message", [
    (dict(coupling="eager"), '"coupling" must be one of'),
    (dict(staging_depth=-1), '"staging_depth" must be >= 0'),
    (dict(gpus=[0, 1]), "producer_gpu names an X-Stage that does not exist"),
    (dict(weights=[1.0, 0.0]), '"producer_weight" must be > 0'),
    (dict(weights=[1.0]), "producer_weight one per producer"),
])
def test_bad_workloads_are_refused_with_a_message(change, message):
    with pytest.raises(ValueError, match=message):
        workload(STREAMS, **change)


def test_bad_tiles_are_refused_with_a_message():
    with pytest.raises(ValueError, match='"mainloop_us" must be >= 0'):
        workload([[{"mainloop": -1.0}]])
    with pytest.raises(ValueError, match='"t_iss0_us" must be > 0'):
        workload([[{"bytes": 10.0, "t0": 0.0}]])
    with pytest.raises(ValueError, match="a tile names a counter >= n_counters"):
        workload([[{"wait": 0, "value": 1}]])


def test_a_short_column_is_named():
    w = workload(STREAMS)
    fields = {k: getattr(w, k) for k in ("offsets", "producer_gpu", "kind", "mainloop_us", "epilogue_us",
                                         "t_iss0_us", "release_us", "wait_counter", "wait_value", "signal_counter")}
    with pytest.raises(ValueError, match="workload array 'bytes' has 2 entries, expected 3"):
        Workload(bytes=np.zeros(2), xstages=w.xstages, **fields)


@pytest.mark.parametrize("drain, capacity, message", [
    (0.0, 1.0, '"drain_bytes_per_us" must be > 0'), (1.0, -1.0, '"capacity_bytes" must be > 0')])
def test_xstage_params_are_checked(drain, capacity, message):
    with pytest.raises(ValueError, match=message):
        XStageParams(drain, capacity)
