"""Small builders shared by the tests."""

from __future__ import annotations

import numpy as np

from xsim.platform import CapacityModel, IssueModel, Platform
from xsim.workload import Workload, XStageParams


def toy_platform(t_iss0_us=1.0, drain_gbps=1.0, capacity_bytes=500.0) -> Platform:
    """A platform with round numbers: constant T_iss0, R in GB/s (1 GB/s = 1000 B/us), Q."""
    return Platform(name="toy", drain_rate_gbps=drain_gbps, issue=IssueModel(t_fixed_us=t_iss0_us),
                    capacity=CapacityModel(max_bytes=capacity_bytes), sms=4, gpus=2)


def workload(streams, drain=1000.0, capacity=500.0, staging_depth=2, coupling="xstage", n_counters=0,
             gpus=None, n_xstages=1, weights=None):
    """A workload from per-producer lists of tile dicts (keys: mainloop, epilogue, bytes, t0, ...)."""
    tiles = [t for s in streams for t in s]
    col = lambda key, default: np.array([t.get(key, default) for t in tiles], dtype=float)
    icol = lambda key, default: np.array([t.get(key, default) for t in tiles], dtype=np.int64)
    return Workload(
        offsets=np.cumsum([0] + [len(s) for s in streams]).astype(np.int64),
        producer_gpu=np.array(gpus if gpus is not None else [0] * len(streams), dtype=np.int64),
        kind=icol("kind", 0), kind_names=("a", "b"),
        mainloop_us=col("mainloop", 0.0), epilogue_us=col("epilogue", 0.0), bytes=col("bytes", 0.0),
        t_iss0_us=col("t0", 1.0), release_us=col("release", 0.0),
        wait_counter=icol("wait", -1), wait_value=icol("value", 0), signal_counter=icol("signal", -1),
        n_counters=n_counters, xstages=tuple(XStageParams(drain, capacity) for _ in range(n_xstages)),
        staging_depth=staging_depth, coupling=coupling,
        signal_on_drain=np.array([t.get("signal_on_drain", False) for t in tiles], dtype=bool),
        producer_weight=None if weights is None else np.asarray(weights, dtype=float),
    )
