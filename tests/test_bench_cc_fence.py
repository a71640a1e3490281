"""benchmarks/cc_fence.py's own readings of a microbenchmark point: only set A fences."""

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import cc_fence as cf  # noqa: E402

from calibration.loadgate_model import LATE, LOAD, STORE, workload  # noqa: E402
from hwkernels import loadgate_plan as plan  # noqa: E402
from xsim.des import simulate  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402


def _stream_point():
    p = next(p for p in plan.SUITES["fencestream"]() if p.key.endswith("S16_C4K_D2_N24_P9"))
    return dataclasses.replace(cf.late_shape(p), base_us=9.0)


@pytest.mark.parametrize("reading", ["own", "own-eq", "own+gate", "own-eq+gate"])
def test_set_c_streams_unfenced_and_set_a_waits_for_its_own_bytes(reading):
    platform = resolve_platform("h200-pcie-host")
    shape = _stream_point()
    w = cf.fence_workload(shape, platform, reading)
    t = simulate(w, engine="fast", trace=False).times
    free = workload(shape, platform, None)   # the same point without any fence, same drain shares
    free = cf.equal_shares(free) if reading.startswith("own-eq") else free
    tf = simulate(free, engine="fast", trace=False).times
    late = w.kind == LATE
    # C's bursts issue as they do without any fence (A's fence holds only A's loads)
    np.testing.assert_allclose(t.issue_start[late], tf.issue_start[free.kind == LATE], atol=1e-6)
    assert np.all(t.dep_wait_us[late] == 0)
    # each of A's loads starts no earlier than its own stores have drained
    store, load = np.flatnonzero(w.kind == STORE), np.flatnonzero(w.kind == LOAD)
    assert len(store) == len(load) == shape.storers
    assert np.all(t.mainloop_start[load] >= t.drain_end[store] - 1e-9)
