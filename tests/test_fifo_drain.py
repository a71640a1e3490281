"""The FIFO-drained X-Stage reference (xsim.des.fifo_drain): hand-computed cases, conservation, order."""

import numpy as np
import pytest

from xsim.des.fifo_drain import simulate


def test_equal_start_shares_the_link_as_one_queue():
    # 2 producers x 2 bytes at 2 B/us, R = 1 B/us: 4 bytes accepted by t = 1, all drained at t = 4
    r = simulate([0, 0], [2, 2], [2, 2], [10, 10], 1.0)
    np.testing.assert_allclose(r.issue_end_us, [1, 1])
    np.testing.assert_allclose(r.drained_us, [4, 4])


def test_bytes_drain_in_acceptance_order():
    # p0 accepts 2 bytes in [0, 1], p1 2 bytes in [1, 2]; the link drains p0's first (done at 2:
    # weighted equal sharing would give 3), then p1's (done at 4)
    r = simulate([0, 1], [2, 2], [2, 2], [10, 10], 1.0)
    np.testing.assert_allclose(r.issue_end_us, [1, 2])
    np.testing.assert_allclose(r.drained_us, [2, 4])


def test_credits_cap_the_outstanding_bytes():
    # one producer, cap 1 B: q rises at 2 - 1 until t = 1, then it issues as fast as credits come
    # back (1 B/us): 3 bytes issued at t = 2, drained at 3
    r = simulate([0], [3], [2], [1], 1.0)
    np.testing.assert_allclose(r.issue_end_us, [2])
    np.testing.assert_allclose(r.drained_us, [3])


def test_two_capped_producers():
    # both at cap at t = 2/3 (q rises 1.5 B/us each), then 0.5 B/us each: issue end 2, drained 4
    r = simulate([0, 0], [2, 2], [2, 2], [1, 1], 1.0)
    np.testing.assert_allclose(r.issue_end_us, [2, 2])
    np.testing.assert_allclose(r.drained_us, [4, 4])


def test_pass_through_below_the_drain_rate():
    r = simulate([0, 0.5], [1, 1], [0.5, 0.4], [1, 1], 1.0)
    np.testing.assert_allclose(r.issue_end_us, [2, 3])
    np.testing.assert_allclose(r.drained_us, [2, 3])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_conservation_and_order_of_completion(seed):
    rng = np.random.default_rng(seed)
    n = 24
    start = 0.07 * np.abs(rng.standard_normal(n))
    nbytes = rng.uniform(2e4, 4e4, n)
    rate = nbytes / 0.6
    cap = np.full(n, 2.5e4)
    drain = 2e4                                     # bytes/us, below every rate: never idle after the first start
    r = simulate(start, nbytes, rate, cap, drain)
    assert np.isclose(r.drained_us.max(), start.min() + nbytes.sum() / drain, rtol=1e-9)
    assert np.all(r.drained_us >= r.issue_end_us - 1e-12)
    order = np.argsort(r.issue_end_us, kind="stable")   # last bytes drain in the order they were accepted
    assert np.all(np.diff(r.drained_us[order]) >= -1e-9)


@pytest.mark.parametrize("bad", [dict(nbytes=[0]), dict(rate=[-1]), dict(cap=[0]), dict(start_us=[-1])])
def test_bad_input(bad):
    args = dict(start_us=[0], nbytes=[1], rate=[1], cap=[1])
    args.update(bad)
    with pytest.raises(ValueError, match="must be"):
        simulate(drain=1.0, **args)
