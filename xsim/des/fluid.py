"""The fluid X-Stage of one source GPU: per-producer outstanding stores, drained at rate R.

Each producer i (one CTA) owns an equal share ``cap = Q(K) / K`` of the outstanding capacity
(the measured Q(K) grows with K: docs/calibration.md). Per producer: outstanding bytes
``q`` (0 <= q <= cap), cumulative drained bytes ``D`` and, while it issues a tile, bytes
``left`` still to issue at its nominal rate ``r = bytes / T_iss0``. Rates are piecewise
constant between events:

- **drain**: the aggregate rate R is shared by weighted water-filling with the platform's
  arbitration weights ``w``: an issuer with nothing outstanding takes at most ``r`` (its
  stores pass straight through) while that fits under the water level L; every other producer
  that wants the drain (bytes outstanding, or an issuer the level does not satisfy) gets
  ``L * w``. Equal weights share fairly.
- **injection**: an issuer injects at ``r`` while ``q < cap``; once its share is full, only
  as fast as its own stores drain (``min(r, L * w)``).

With identical producers this is one queue of capacity Q drained at R, so eqs. 1-7 hold
exactly; with unequal weights producers drift out of phase and the slowest one sets the
burst's span, as on the hardware. A tile's bytes have drained when ``D`` reaches the value
``D + q`` had at its issue end (each producer's stores drain in order).

**The virtual clock.** The stage keeps ``V = integral of L dt``. A producer that drains at
``L * w`` moves by ``w`` per unit of V, whatever L does, so its events (queue empty, issue end
of a full producer, a drain mark) sit at fixed V keys: ``V0 + bytes / w``. Only the few
issuers whose queue is filling or emptying (mode MIXED) have an event time that depends on
L; their keys are recomputed whenever the water-fill runs. So each producer is kept as an
*anchor* (its q, D, left at time t0 and clock V0) plus a mode that fixes how they move:

========  ======================  =======================================  ===============
mode      state                    motion                                   event keys
========  ======================  =======================================  ===============
IDLE      q = 0, not issuing       none                                     none
BACKLOG   q > 0, not issuing       q -= w dV, D += w dV                     empty, mark (V)
FULL      q = cap, issuing, Lw<=r  left -= w dV, D += w dV                  finish, mark (V)
PASS      q = 0, issuing, served   left -= r dt, D += r dt                  finish (t)
MIXED     any other issuer         q += r dt - w dV, left -= r dt, D += w dV finish, q at cap
                                                                            or 0 (t), mark (V)
========  ======================  =======================================  ===============

A producer is re-anchored (its values evaluated and stored, t0 = now, V0 = V) when one of
its events is due and when its mode changes. These functions are the whole arithmetic of the
X-Stage. Both engines run them compiled by numba from this source (:func:`compiled`), with
one difference: the reference engine lets :func:`flows` examine every producer
(``scan_all``), the fast engine only the candidates that can change (touched producers, the
issuers in PASS or MIXED, full producers the new level overtakes). Their results are equal bit
for bit, which the engine-equality tests check.

Weights are rounded to multiples of 2**-20 (:func:`quantize_weights`), so the sum of the
weights of the producers that want the drain is exact in any order of updates.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

# Thresholds are relative to the magnitude they compare (microseconds, or the clock V).
REL_TOL = 1e-12
WEIGHT_QUANTUM = 2.0 ** -20

IDLE, BACKLOG, FULL, PASS, MIXED = range(5)                   # modes
NO_DEMAND, FINITE, INFINITE = range(3)                        # what a producer wants of the drain
# rows of the per-producer float array x: anchor, rate, weight, event keys, mark, scratch, the
# mode's motion (q += QA dt - QB dV, D += DA dt + DB dV, left -= LA dt + LB dV), and the inner
# nodes of two min-trees over the keys KT and KV (:func:`tree_set`)
(Q0, D0, L0, T0, V0, RATE, W, KFIN, KBND, KT, KV, MARK, QNOW, DNOW, LNOW, KEY, QA, QB, DA, DB, LA, LB,
 TREE_T, TREE_V) = range(24)
NX = 24
# rows of the per-producer int array y: mode, demand, served, flags, lists (local indices), and
# each producer's place in the list of those whose q moves (BACKLOG, MIXED; -1 if not in it)
MODE, DEMAND, SAT, TOUCHED, SEEN, ACTIVE, TOUCH, DUE, ORDER, CAND, MOVING, MPOS = range(12)
NY = 12
# the stage's float scalars st and int counters sc
S_T, S_V, S_L, S_CAP, S_R, S_W, S_FULL_MIN = range(7)
NS = 7
C_ACTIVE, C_TOUCH, C_INF, C_MOVING = range(4)
NC = 4


def quantize_weights(weight: np.ndarray) -> np.ndarray:
    """Arbitration weights on a grid of 2**-20 (at least one step), so their sums are exact."""
    steps = np.maximum(np.rint(np.asarray(weight, dtype=float) / WEIGHT_QUANTUM), 1.0)
    return steps * WEIGHT_QUANTUM


def new_stage(drain: float, cap: float, weight: np.ndarray, extra_y: int = 0):
    """Arrays (st, sc, x, y) of an empty stage whose producers have these (quantized) weights;
    ``extra_y`` int rows are left to the caller."""
    n = len(weight)
    st, sc = np.zeros(NS), np.zeros(NC, np.int64)
    st[S_CAP], st[S_R], st[S_FULL_MIN] = cap, drain, math.inf
    x = np.zeros((NX, n))
    x[W] = quantize_weights(weight) if n else x[W]
    x[KFIN:MARK + 1] = math.inf
    x[TREE_T:TREE_V + 1] = math.inf
    y = np.zeros((NY + extra_y, n), np.int64)
    y[MPOS] = -1
    return st, sc, x, y


def tol_t(now: float) -> float:
    """An event closer than this to ``now`` is due now (rounding cannot resolve it)."""
    return REL_TOL * max(1.0, now)


def threshold_v(st, now: float) -> float:
    """The clock value up to which V keys are due at ``now``."""
    return st[S_V] * (1.0 + REL_TOL) + st[S_L] * tol_t(now)


def advance(st, now: float) -> None:
    """Move the clock to ``now`` at the current level."""
    dt = now - st[S_T]
    if dt > 0.0:
        st[S_V] += st[S_L] * dt
    st[S_T] = now


def evaluate(x, k: int, now: float, v: float, cap: float):
    """(q, D, left) of producer k at time ``now`` and clock ``v``, from its anchor and motion
    (a zero coefficient adds exactly nothing, so each mode rounds as its own formula would)."""
    s, u = now - x[T0, k], v - x[V0, k]
    q = min(max(x[Q0, k] + x[QA, k] * s - x[QB, k] * u, 0.0), cap)
    return q, x[D0, k] + x[DA, k] * s + x[DB, k] * u, max(x[L0, k] - x[LA, k] * s - x[LB, k] * u, 0.0)


def set_mode(sc, x, y, k: int, mode: int) -> None:
    """Producer k moves in ``mode`` from its anchor on: the coefficients of its motion, and its
    place in the list of producers whose q moves (the others' q stays at its anchor value, which
    is then ``x[QNOW, k]``)."""
    r, w = x[RATE, k], x[W, k]
    y[MODE, k] = mode
    moving = mode == BACKLOG or mode == MIXED
    if moving and y[MPOS, k] < 0:
        y[MPOS, k] = sc[C_MOVING]
        y[MOVING, sc[C_MOVING]] = k
        sc[C_MOVING] += 1
    elif not moving and y[MPOS, k] >= 0:
        last = y[MOVING, sc[C_MOVING] - 1]
        y[MOVING, y[MPOS, k]], y[MPOS, last] = last, y[MPOS, k]
        y[MPOS, k] = -1
        sc[C_MOVING] -= 1
        x[QNOW, k] = x[Q0, k]
    x[QA, k] = r if mode == MIXED else 0.0
    x[QB, k] = w if mode == BACKLOG or mode == MIXED else 0.0
    x[DA, k] = r if mode == PASS else 0.0
    x[DB, k] = w if mode == BACKLOG or mode == FULL or mode == MIXED else 0.0
    x[LA, k] = r if mode == PASS or mode == MIXED else 0.0
    x[LB, k] = w if mode == FULL else 0.0


def anchor(x, k: int, q: float, d: float, left: float, now: float, v: float) -> None:
    x[Q0, k], x[D0, k], x[L0, k], x[T0, k], x[V0, k] = q, d, left, now, v


def touch(sc, y, k: int) -> None:
    """Producer k changed at this instant: flows must look at it."""
    if y[TOUCHED, k] == 0:
        y[TOUCHED, k] = 1
        y[TOUCH, sc[C_TOUCH]] = k
        sc[C_TOUCH] += 1


def mark_key(x, k: int, mark: float) -> float:
    """The clock value at which producer k's drained bytes reach ``mark`` (it drains at L w)."""
    return x[V0, k] + (mark - x[D0, k]) / x[W, k]


def mark_due(st, x, y, k: int, mark: float, now: float) -> bool:
    """Producer k's stores up to cumulative byte ``mark`` have drained by ``now``."""
    mode = y[MODE, k]
    if mode == BACKLOG or mode == FULL or mode == MIXED:
        return mark_key(x, k, mark) <= threshold_v(st, now)
    return mark <= evaluate(x, k, now, st[S_V], st[S_CAP])[1]


def start(st, sc, x, y, k: int, nbytes: float, rate: float, now: float) -> None:
    """Producer k starts issuing ``nbytes`` at ``rate`` (the stage advanced to ``now``)."""
    q, d, _ = evaluate(x, k, now, st[S_V], st[S_CAP])
    anchor(x, k, q, d, nbytes, now, st[S_V])
    x[RATE, k] = rate
    touch(sc, y, k)


def settle_one(st, x, y, k: int, now: float, thr_t: float, thr_v: float) -> None:
    """Evaluate producer k, put every quantity whose event is due exactly on its boundary, and
    re-anchor it."""
    cap = st[S_CAP]
    q, d, left = evaluate(x, k, now, st[S_V], cap)
    mode = y[MODE, k]
    if mode == FULL:
        if x[KFIN, k] <= thr_v:
            left = 0.0
    elif mode == PASS or mode == MIXED:
        if x[KFIN, k] <= thr_t:
            left = 0.0
    if mode == BACKLOG and x[KBND, k] <= thr_v:
        d, q = d + q, 0.0
    elif mode == MIXED and x[KBND, k] <= thr_t:
        if x[RATE, k] - st[S_L] * x[W, k] > 0.0:
            q = cap
        else:
            d, q = d + q, 0.0
    anchor(x, k, q, d, left, now, st[S_V])


def snap(st, sc, x, y, n: int, now: float, scan_all: bool) -> int:
    """Settle every producer with an event due at ``now``; their local indices, in order, go to
    ``y[DUE, :count]`` (and to the touched list). Returns the count. ``scan_all`` tests every
    producer (reference); otherwise the min-trees find them."""
    thr_t, thr_v = now + tol_t(now), threshold_v(st, now)
    count = 0
    if scan_all:
        for k in range(n):
            if x[KT, k] <= thr_t or x[KV, k] <= thr_v:
                y[DUE, count] = k
                count += 1
    elif n > 0:
        found = collect_due(x, y, TREE_V, KV, thr_v, collect_due(x, y, TREE_T, KT, thr_t, 0))
        for j in range(found):  # into producer order
            k = y[CAND, j]
            y[SEEN, k] = 0
            m = count
            while m > 0 and y[DUE, m - 1] > k:
                y[DUE, m] = y[DUE, m - 1]
                m -= 1
            y[DUE, m] = k
            count += 1
    for j in range(count):
        k = y[DUE, j]
        settle_one(st, x, y, k, now, thr_t, thr_v)
        touch(sc, y, k)
    return count


def keys(st, x, y, k: int, now: float) -> None:
    """Producer k's event keys from its anchor, mode and (for MIXED) the current level."""
    mode = y[MODE, k]
    kfin, kbnd, kt, kv = math.inf, math.inf, math.inf, math.inf
    if mode == BACKLOG:
        kbnd = x[V0, k] + x[Q0, k] / x[W, k]
        kv = kbnd
    elif mode == FULL:
        kfin = x[V0, k] + x[L0, k] / x[W, k]
        kv = kfin
    elif mode == PASS:
        kfin = x[T0, k] + x[L0, k] / x[RATE, k]
        kt = kfin
    elif mode == MIXED:
        kfin = x[T0, k] + x[L0, k] / x[RATE, k]
        q = evaluate(x, k, now, st[S_V], st[S_CAP])[0]
        dq = x[RATE, k] - st[S_L] * x[W, k]
        if dq > 0.0:
            kbnd = now + (st[S_CAP] - q) / dq
        elif dq < 0.0 and q > 0.0:
            kbnd = now + q / -dq
        kt = min(kfin, kbnd)
    if x[MARK, k] < math.inf and (mode == BACKLOG or mode == FULL or mode == MIXED):
        kv = min(kv, mark_key(x, k, x[MARK, k]))
    x[KFIN, k], x[KBND, k] = kfin, kbnd
    if x[KT, k] != kt:
        x[KT, k] = kt
        tree_set(x, TREE_T, KT, k)
    if x[KV, k] != kv:
        x[KV, k] = kv
        tree_set(x, TREE_V, KV, k)


# ---- min-trees over the event keys (the fast engine's index; the reference scans) ----------------
# Node i of the tree over key row ``leaf`` (n leaves): i >= n is leaf i - n, x[leaf, i - n]; an
# inner node 1 <= i < n holds x[tree, i] = min(node 2i, node 2i + 1). Node 1 is the minimum.

def node(x, tree: int, leaf: int, i: int) -> float:
    n = x.shape[1]
    return x[tree, i] if i < n else x[leaf, i - n]


def tree_set(x, tree: int, leaf: int, k: int) -> None:
    """Leaf k changed: recompute its ancestors (stopping where a minimum does not change)."""
    i = (x.shape[1] + k) // 2
    while i >= 1:
        m = min(node(x, tree, leaf, 2 * i), node(x, tree, leaf, 2 * i + 1))
        if x[tree, i] == m:
            return
        x[tree, i] = m
        i //= 2


def collect_due(x, y, tree: int, leaf: int, threshold: float, count: int) -> int:
    """Append to ``y[CAND]`` (from ``count``) every producer whose key is <= ``threshold`` and not
    yet collected (``y[SEEN]``): a depth-first walk that skips subtrees whose minimum is above it."""
    n, i = x.shape[1], 1
    while i > 0:
        if node(x, tree, leaf, i) <= threshold:
            if i >= n:
                if y[SEEN, i - n] == 0:
                    y[SEEN, i - n] = 1
                    y[CAND, count] = i - n
                    count += 1
            else:
                i = 2 * i
                continue
        while i & 1:  # climb out of right children, then go to the right sibling
            i >>= 1
        if i == 0:
            break
        i += 1
    return count


def _consider(st, sc, x, y, k: int, now: float, f: int) -> int:
    """flows' first look at candidate k: its values now and what it wants of the drain; finite
    demands are insertion-sorted into ``y[ORDER, :f]`` by (rate / weight, index). Returns f."""
    q, d, left = evaluate(x, k, now, st[S_V], st[S_CAP])
    x[QNOW, k], x[DNOW, k], x[LNOW, k] = q, d, left
    demand = INFINITE if q > 0.0 else (FINITE if left > 0.0 else NO_DEMAND)
    old = y[DEMAND, k]
    if (old == NO_DEMAND) != (demand == NO_DEMAND):
        st[S_W] += x[W, k] if demand != NO_DEMAND else -x[W, k]
    sc[C_INF] += (demand == INFINITE) - (old == INFINITE)
    y[DEMAND, k], y[SAT, k] = demand, 0
    if demand == FINITE:
        x[KEY, k] = x[RATE, k] / x[W, k]
        m = f
        while m > 0 and (x[KEY, y[ORDER, m - 1]] > x[KEY, k]
                         or (x[KEY, y[ORDER, m - 1]] == x[KEY, k] and y[ORDER, m - 1] > k)):
            y[ORDER, m] = y[ORDER, m - 1]
            m -= 1
        y[ORDER, m] = k
        f += 1
    return f


def _water_fill(st, sc, x, y, f: int) -> float:
    """The level: finite demands in order pass straight through while they fit under it."""
    budget, total, m = st[S_R], st[S_W], 0
    while m < f and x[KEY, y[ORDER, m]] <= budget / total:
        k = y[ORDER, m]
        y[SAT, k] = 1
        budget -= x[RATE, k]
        total -= x[W, k]
        m += 1
    if m < f or sc[C_INF] > 0:
        return budget / total
    return 0.0


def _update(st, sc, x, y, k: int, now: float) -> None:
    """flows' second look at candidate k: its mode at the new level; re-anchor it if the mode
    changes, and recompute its keys if it changed, was touched, or is an issuer in PASS/MIXED."""
    q, left, level, cap = x[QNOW, k], x[LNOW, k], st[S_L], st[S_CAP]
    if left <= 0.0:
        mode = BACKLOG if q > 0.0 else IDLE
    elif q <= 0.0:
        mode = PASS if y[SAT, k] == 1 else MIXED
    elif q >= cap and level * x[W, k] <= x[RATE, k]:
        mode = FULL
    else:
        mode = MIXED
    changed = mode != y[MODE, k]
    if changed:
        anchor(x, k, q, x[DNOW, k], left, now, st[S_V])
        set_mode(sc, x, y, k, mode)
    if mode == FULL:
        st[S_FULL_MIN] = min(st[S_FULL_MIN], x[RATE, k] / x[W, k])
    if changed or y[TOUCHED, k] == 1 or mode == PASS or mode == MIXED:
        keys(st, x, y, k, now)
    if mode == PASS or mode == MIXED:
        y[ACTIVE, sc[C_ACTIVE]] = k
        sc[C_ACTIVE] += 1


def flows(st, sc, x, y, n: int, now: float, scan_all: bool) -> None:
    """Re-run the water-fill at ``now`` (the stage advanced to it) and bring every producer's
    mode and keys up to date. ``scan_all`` examines every producer (reference); otherwise only
    the candidates: touched producers, issuers in PASS or MIXED, and full producers the new
    level overtakes (``L w > r``: they start to empty)."""
    c = 0  # candidates: y[CAND, :c]
    if scan_all:
        for k in range(n):
            y[CAND, c] = k
            c += 1
    else:
        for j in range(sc[C_TOUCH]):
            k = y[TOUCH, j]
            y[SEEN, k] = 1
            y[CAND, c] = k
            c += 1
        for j in range(sc[C_ACTIVE]):
            k = y[ACTIVE, j]
            if y[SEEN, k] == 0:
                y[SEEN, k] = 1
                y[CAND, c] = k
                c += 1
    f = 0
    for j in range(c):
        f = _consider(st, sc, x, y, y[CAND, j], now, f)
    level = _water_fill(st, sc, x, y, f)
    st[S_L] = level
    if not scan_all and level * (1.0 + 1e-9) > st[S_FULL_MIN]:  # some full producer may now empty
        lowest = math.inf
        for k in range(n):
            if y[MODE, k] == FULL and y[SEEN, k] == 0:
                if level * x[W, k] > x[RATE, k]:
                    _consider(st, sc, x, y, k, now, 0)  # q > 0: an infinite demand, as before
                    y[SEEN, k] = 1
                    y[CAND, c] = k
                    c += 1
                else:
                    lowest = min(lowest, x[RATE, k] / x[W, k])
        st[S_FULL_MIN] = lowest
    sc[C_ACTIVE] = 0
    for j in range(c):
        _update(st, sc, x, y, y[CAND, j], now)
    for j in range(c):
        k = y[CAND, j]
        y[SEEN, k], y[TOUCHED, k] = 0, 0
    sc[C_TOUCH] = 0


def next_event(st, x, n: int, now: float, scan_all: bool) -> float:
    """Time from ``now`` until the earliest event key (inf if none): a scan of every producer
    (``scan_all``, reference) or the roots of the min-trees."""
    kt, kv = math.inf, math.inf
    if scan_all:
        for k in range(n):
            kt, kv = min(kt, x[KT, k]), min(kv, x[KV, k])
    elif n > 0:
        kt, kv = node(x, TREE_T, KT, 1), node(x, TREE_V, KV, 1)
    dt = kt - now
    if kv < math.inf and st[S_L] > 0.0:
        dt = min(dt, (kv - st[S_V]) / st[S_L])
    return max(dt, 0.0)


def fill_q(st, sc, x, y, n: int, now: float, scan_all: bool) -> None:
    """``x[QNOW, :n]``: every producer's q at ``now`` (for the stage's q(t) trace), as
    :func:`evaluate` computes it. ``scan_all`` evaluates every producer (reference); otherwise
    only those whose q moves, since the others' q has stayed at the value stored when they
    stopped moving (exactly what evaluate gives them: zero coefficients)."""
    v, cap = st[S_V], st[S_CAP]
    if scan_all:
        for k in range(n):
            x[QNOW, k] = evaluate(x, k, now, v, cap)[0]
    else:
        for j in range(sc[C_MOVING]):
            k = y[MOVING, j]
            x[QNOW, k] = evaluate(x, k, now, v, cap)[0]


@lru_cache(maxsize=1)
def compiled() -> dict:
    """numba twins of this module's functions, calling each other (one compile per process)."""
    import inspect
    import types

    import numba

    namespace = dict(globals())
    for name, py in list(namespace.items()):
        if (inspect.isfunction(py) and py.__module__ == __name__
                and name not in ("compiled", "quantize_weights", "new_stage")):
            twin = types.FunctionType(py.__code__, namespace, name, py.__defaults__)
            namespace[name] = numba.njit(cache=False, _nrt=False)(twin)  # nothing allocates
    return namespace
