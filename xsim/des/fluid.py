"""The fluid X-Stage of one source GPU: per-producer outstanding stores, drained at rate R.

Each producer i (one CTA) owns an equal share ``cap = Q(K) / K`` of the outstanding capacity
(the measured Q(K) grows with K: docs/calibration.md). State per producer: outstanding bytes
``q_i`` (0 <= q_i <= cap), cumulative drained bytes ``D_i`` and, while it issues a tile,
bytes ``left_i`` still to issue at its nominal rate ``r_i = bytes / T_iss0``. Rates are
piecewise constant between events:

- **drain**: the aggregate rate R is shared among the producers that want it, by weighted
  water-filling with the platform's arbitration weights ``w_i``: a producer with bytes
  outstanding takes what it is given, an issuing producer with none takes at most ``r_i``
  (its stores pass straight through), the rest take nothing. Equal weights share fairly.
- **injection**: an issuing producer injects at ``r_i`` while ``q_i < cap``; once its share
  is full, only as fast as its own stores drain.

With identical producers this is one queue of capacity Q drained at R, so eqs. 1–7 hold
exactly; with unequal weights producers drift out of phase and the slowest one sets the
burst's span, as on the hardware. A tile's bytes have drained when ``D_i`` reaches the value
``D_i + q_i`` had at its issue end (each producer's stores drain in order).

These functions are the whole arithmetic of the X-Stage. Both engines run them compiled by
numba from this source (:func:`compiled`), so both round identically.
"""

from __future__ import annotations

import math
from functools import lru_cache


# Thresholds are relative to the magnitude they compare (bytes or microseconds).
REL_TOL = 1e-12


def due(dt: float, now: float) -> bool:
    """An event ``dt`` ahead of ``now`` is due now: closer than rounding can resolve."""
    return dt <= REL_TOL * max(1.0, now)


def flows(q, left, rate, weight, cap: float, drain: float, n: int, out, inj, key, order) -> None:
    """Fill ``out[:n]`` (drain rates) and ``inj[:n]`` (injection rates) for the current state.

    The drain is water-filled in increasing demand per unit weight (``key``), ties by index:
    first the issuers with nothing outstanding (finite key, ``rate / weight``: their stores pass
    straight through while that fits under the water level), then the producers with bytes
    outstanding (infinite key: they take what is left, by weight). ``key`` (float) and
    ``order`` (int) are the caller's scratch arrays of length n: nothing is allocated. The
    finite keys are insertion-sorted as they are found, O(f^2) for f of them, which beats a
    full sort because few issuers have nothing outstanding at once.
    """
    total_w, f, backlog = 0.0, 0, False
    for i in range(n):
        out[i] = 0.0
        if q[i] > 0.0:
            backlog = True
        elif left[i] > 0.0:  # insert i among the finite keys, after those <= its own (stable)
            key[i] = rate[i] / weight[i]
            m = f
            while m > 0 and key[order[m - 1]] > key[i]:
                order[m] = order[m - 1]
                m -= 1
            order[m] = i
            f += 1
        else:
            continue  # wants nothing
        total_w += weight[i]
    budget, m, level = drain, 0, 0.0
    while m < f and key[order[m]] <= budget / total_w:  # passes straight through
        i = order[m]
        out[i] = rate[i]
        budget -= rate[i]
        total_w -= weight[i]
        m += 1
    if m < f or backlog:
        level = budget / total_w
        for m2 in range(m, f):
            out[order[m2]] = level * weight[order[m2]]
    for i in range(n):
        if q[i] > 0.0:
            out[i] = level * weight[i]
        if left[i] <= 0.0:
            inj[i] = 0.0
        elif q[i] < cap:
            inj[i] = rate[i]
        else:
            inj[i] = min(rate[i], out[i])


def advance(q, drained, left, out, inj, cap: float, n: int, dt: float) -> None:
    """The state after ``dt`` at constant rates; q clamped onto [0, cap], bytes conserved."""
    if dt <= 0.0:
        return
    tol = REL_TOL * cap
    for i in range(n):
        q[i] += (inj[i] - out[i]) * dt
        drained[i] += out[i] * dt
        left[i] = max(left[i] - inj[i] * dt, 0.0)
        if q[i] >= cap - tol:
            q[i] = cap
        elif q[i] <= tol:
            drained[i] += q[i]  # the residual has drained
            q[i] = 0.0


def time_to_boundary(q: float, cap: float, out: float, inj: float) -> float:
    """Time until a producer's q reaches cap or 0 at its current rates (inf if never)."""
    dq = inj - out
    if dq > 0.0 and q < cap:
        return (cap - q) / dq
    if dq < 0.0 and q > 0.0:
        return q / -dq
    return math.inf


def time_to_finish(left: float, inj: float) -> float:
    """Time until an issuer has injected its ``left`` bytes (inf if it is not issuing)."""
    if left <= 0.0:
        return 0.0
    return left / inj if inj > 0.0 else math.inf


def time_to_drained(mark: float, drained: float, out: float) -> float:
    """Time until a producer's cumulative drained bytes reach ``mark`` (a tile's last byte)."""
    if mark - drained <= REL_TOL * max(1.0, mark):
        return 0.0
    return (mark - drained) / out if out > 0.0 else math.inf


def snap(q, drained, left, out, inj, cap: float, n: int, now: float) -> None:
    """Put every q and left that is due to reach a boundary now exactly on it."""
    for i in range(n):
        if left[i] > 0.0 and due(time_to_finish(left[i], inj[i]), now):
            left[i] = 0.0
        if due(time_to_boundary(q[i], cap, out[i], inj[i]), now):
            if inj[i] > out[i]:
                q[i] = cap
            else:
                drained[i] += q[i]
                q[i] = 0.0


def next_event(q, drained, left, out, inj, mark, cap: float, n: int) -> float:
    """Time until the next boundary, issue end or drain mark (``mark[i]``: inf if none)."""
    dt = math.inf
    for i in range(n):
        dt = min(dt, time_to_boundary(q[i], cap, out[i], inj[i]))
        if left[i] > 0.0:
            dt = min(dt, time_to_finish(left[i], inj[i]))
        if mark[i] < math.inf:
            dt = min(dt, time_to_drained(mark[i], drained[i], out[i]))
    return dt


@lru_cache(maxsize=1)
def compiled() -> dict:
    """numba twins of this module's functions, calling each other (one compile per process)."""
    import inspect
    import types

    import numba

    namespace = dict(globals())
    for name, py in list(namespace.items()):
        if inspect.isfunction(py) and py.__module__ == __name__ and name != "compiled":
            twin = types.FunctionType(py.__code__, namespace, name, py.__defaults__)
            namespace[name] = numba.njit(cache=False)(twin)
    return namespace
