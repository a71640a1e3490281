"""The shared-pool FIFO reference (xsim.des.fifo_pool): hand-computed cases, the pure FIFO as alpha = 1,
an independent time-stepped check, conservation, the pool and the limits never exceeded, bad input."""

from collections import deque

import numpy as np
import pytest

from xsim.des import fifo_drain
from xsim.des.fifo_pool import simulate, water_fill


def test_water_fill_by_weight_with_ceilings():
    np.testing.assert_allclose(water_fill(np.array([4.0, 4.0]), np.array([3.0, 1.0]), 1.0), [0.75, 0.25])
    np.testing.assert_allclose(water_fill(np.array([0.5, 4.0]), np.array([3.0, 1.0]), 1.0), [0.5, 0.5])
    np.testing.assert_allclose(water_fill(np.array([0.2, 0.3]), np.array([1.0, 1.0]), 1.0), [0.2, 0.3])


def test_freed_credits_go_back_by_weight():
    # 2 x 4 B at 4 B/us, R = 1, pool 2, no per-producer limit, weights 3 : 1. The pool fills at
    # t = 2/7 (8/7 B each accepted); then credits come back at 0.75 / 0.25 B/us: p0 issues its last
    # byte at 2/7 + (20/7) / 0.75 = 86/21, p1 when all 8 B are accepted (8 - 2 = 6); p0's last byte
    # drains 2 us (the pool) later, p1's at 8
    r = simulate([0, 0], [4, 4], [4, 4], [3, 1], [2, 2], 2, 1.0)
    np.testing.assert_allclose(r.issue_end_us, [86 / 21, 6])
    np.testing.assert_allclose(r.drained_us, [128 / 21, 8])


def test_the_limit_holds_back_the_heavy_producer():
    # as above with limit 1.25: p0 reaches it at 9/7, then alternates 0.5 / 0.75 B/us one 1-us head
    # segment after another (own drain at the limit): 20/7 B issued at 30/7 + (5/14) / 0.75 = 100/21
    r = simulate([0, 0], [4, 4], [4, 4], [3, 1], [1.25, 1.25], 2, 1.0)
    np.testing.assert_allclose(r.issue_end_us[0], 100 / 21)
    np.testing.assert_allclose(r.drained_us.max(), 8)
    assert r.peak_q_bytes.max() <= 1.25 + 1e-9 and r.peak_pool_bytes <= 2 + 1e-9


def test_three_producers():
    # 3 x 2 B at 10 B/us, R = 1, pool 1.5, weights 1 : 1 : 2. Full at t = 1.5/29 (15/29 B each);
    # then 0.25 / 0.25 / 0.5 B/us: p2 done at 87.5/29, p0 and p1 at 1/2 each until 6 - 1.5 = 4.5.
    # The link never idles, so a byte accepted at t drains at t + 1.5
    r = simulate([0, 0, 0], [2, 2, 2], [10, 10, 10], [1, 1, 2], [1.5] * 3, 1.5, 1.0)
    np.testing.assert_allclose(r.issue_end_us, [4.5, 4.5, 87.5 / 29])
    np.testing.assert_allclose(r.drained_us, [6, 6, 131 / 29])


def test_one_producer_the_tighter_of_pool_and_limit():
    for limit, pool in ((1.0, 5.0), (5.0, 1.0)):
        r = simulate([0], [3], [2], [1], [limit], pool, 1.0)
        np.testing.assert_allclose(r.issue_end_us, [2])            # as fifo_drain's cap 1 case
        np.testing.assert_allclose(r.drained_us, [3])


def _random_case(seed, n=12):
    rng = np.random.default_rng(seed)
    start = 0.07 * np.abs(rng.standard_normal(n))
    nbytes = rng.uniform(2e4, 4e4, n)
    rate = nbytes / 0.6
    weight = rng.lognormal(0.0, 0.4, n)
    return start, nbytes, rate, weight, 2e4, 2.5e4 * n      # drain (B/us), pool


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alpha_one_is_the_pure_fifo(seed):
    start, nbytes, rate, weight, drain, pool = _random_case(seed)
    cap = np.full(len(nbytes), pool / len(nbytes))
    ref = fifo_drain.simulate(start, nbytes, rate, cap, drain)
    r = simulate(start, nbytes, rate, weight, cap, pool, drain)
    np.testing.assert_allclose(r.issue_end_us, ref.issue_end_us, rtol=1e-9)
    np.testing.assert_allclose(r.drained_us, ref.drained_us, rtol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alpha", [1.5, 4.0, 100.0])
def test_conservation_and_the_pool_never_exceeded(seed, alpha):
    start, nbytes, rate, weight, drain, pool = _random_case(seed, n=24)
    pool = 0.3 * nbytes.sum()
    limit = np.full(len(nbytes), alpha * pool / len(nbytes))
    r = simulate(start, nbytes, rate, weight, limit, pool, drain)
    assert np.isclose(r.drained_us.max(), start.min() + nbytes.sum() / drain, rtol=1e-9)
    assert np.all(r.drained_us >= r.issue_end_us - 1e-12)
    assert r.peak_pool_bytes <= pool * (1 + 1e-9)
    assert np.all(r.peak_q_bytes <= limit * (1 + 1e-9))
    order = np.argsort(r.issue_end_us, kind="stable")        # last bytes drain in acceptance order
    assert np.all(np.diff(r.drained_us[order]) >= -1e-9)


def _stepped(start, nbytes, rate, weight, limit, pool, drain, dt):
    """Time-stepped chunks: each step the link drains drain * dt from the head of a deque of
    (producer, bytes) in acceptance order, then grants min(r dt, left, limit - q) to every issuer,
    water-filled by weight when the grants exceed the free pool."""
    n = len(nbytes)
    acc, q, queue = np.zeros(n), np.zeros(n), deque()
    issue_end, drained, t = np.full(n, np.nan), np.full(n, np.nan), 0.0
    while np.isnan(drained).any():
        t += dt
        room = drain * dt
        while room > 0 and queue:
            p, b = queue[0]
            take = min(b, room)
            q[p] -= take
            room -= take
            if take == b:
                queue.popleft()
            else:
                queue[0] = (p, b - take)
        want = np.where(start <= t, np.minimum(np.minimum(rate * dt, nbytes - acc), np.maximum(limit - q, 0)), 0.0)
        grant = water_fill(want, weight, max(pool - q.sum(), 0.0))
        for p in np.flatnonzero(grant > 0):
            queue.append((p, grant[p]))
        acc += grant
        q += grant
        issue_end[np.isnan(issue_end) & (acc >= nbytes - 1e-9)] = t
        drained[np.isnan(drained) & (acc >= nbytes - 1e-9) & (q <= 1e-9)] = t
    return issue_end, drained


def test_matches_an_independent_time_stepped_fluid():
    start, nbytes, rate, weight = [0.0, 0.1, 0.3], [4.0, 3.0, 5.0], [5.0, 4.0, 6.0], [3.0, 1.0, 2.0]
    limit, pool, drain = np.array([1.6, 1.6, 1.6]), 3.0, 1.0
    r = simulate(start, nbytes, rate, weight, limit, pool, drain)
    ie, dr = _stepped(np.array(start), np.array(nbytes), np.array(rate), np.array(weight), limit, pool, drain, 2e-4)
    np.testing.assert_allclose(r.issue_end_us, ie, atol=5e-3)
    np.testing.assert_allclose(r.drained_us, dr, atol=5e-3)


@pytest.mark.parametrize("bad", [dict(weight=[0]), dict(limit=[-1]), dict(pool=0.0), dict(nbytes=[0]),
                                 dict(rate=[-1]), dict(start_us=[-1])])
def test_bad_input(bad):
    args = dict(start_us=[0], nbytes=[1], rate=[1], weight=[1], limit=[1], pool=1.0)
    args.update(bad)
    with pytest.raises(ValueError, match="must be"):
        simulate(drain=1.0, **args)
