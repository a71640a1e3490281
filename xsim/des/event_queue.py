"""SimPy's event queue for the fast engine: a heap for timeouts, a FIFO ring for "now".

SimPy orders scheduled events by (time, priority, insertion number). Entries triggered at the
current time (``event.succeed()``) carry the largest keys so far, so a FIFO ring keeps them
sorted, and merging the ring's head with the heap's top by (time, key) gives exactly SimPy's
order at a fraction of the heap's cost.

The queue is three arrays: ``qt`` (float, entry times) and ``qk`` (int, columns ``Q_KEY``,
``Q_KIND``, ``Q_ARG``, ``Q_GEN``), each with ``2 * size`` rows: rows ``0..size`` hold the heap,
rows ``size..2 * size`` the ring; and ``ctr`` (int, ``C_LEN`` heap length, ``C_EID`` next
insertion number, ``C_RING_HEAD`` and ``C_RING_N``). An entry's kind, argument and generation
are the caller's to interpret. Compiled without numba's runtime: no function here allocates.
"""

from __future__ import annotations

import numba
import numpy as np

URGENT, NORMAL = 0, 1          # SimPy's priorities: Initialize is urgent, everything else normal
PRIO_SHIFT = 1 << 62           # queue key = priority * PRIO_SHIFT + insertion number
Q_KEY, Q_KIND, Q_ARG, Q_GEN = range(4)                      # qk columns
C_LEN, C_EID, C_RING_HEAD, C_RING_N = range(4)              # ctr


def empty(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A queue with room for ``size`` pending timeouts and ``size`` entries triggered now."""
    return np.zeros(2 * size), np.zeros((2 * size, 4), np.int64), np.zeros(4, np.int64)


@numba.njit(_nrt=False, inline="always")
def _before(qt, qk, a, b):
    return qt[a] < qt[b] or (qt[a] == qt[b] and qk[a, Q_KEY] < qk[b, Q_KEY])


@numba.njit(_nrt=False, inline="always")
def _swap(qt, qk, a, b):
    qt[a], qt[b] = qt[b], qt[a]
    for c in range(4):
        qk[a, c], qk[b, c] = qk[b, c], qk[a, c]


@numba.njit(_nrt=False, inline="always")
def _put(qt, qk, ctr, j, t, prio, kind, arg, gen):
    qt[j] = t
    qk[j, Q_KEY], qk[j, Q_KIND], qk[j, Q_ARG], qk[j, Q_GEN] = prio * PRIO_SHIFT + ctr[C_EID], kind, arg, gen
    ctr[C_EID] += 1


@numba.njit(_nrt=False)
def timeout(qt, qk, ctr, t, kind, arg):
    """``env.timeout``: a heap entry at time ``t``."""
    n = ctr[C_LEN]
    if n == qt.shape[0] // 2:
        raise RuntimeError("fast engine: event heap overflow")
    _put(qt, qk, ctr, n, t, NORMAL, kind, arg, 0)
    ctr[C_LEN] = n + 1
    while n > 0 and _before(qt, qk, n, (n - 1) // 2):
        _swap(qt, qk, n, (n - 1) // 2)
        n = (n - 1) // 2


@numba.njit(_nrt=False, inline="always")
def ring_push(qt, qk, ctr, now, prio, kind, arg, gen):
    """An entry at the current time with priority ``prio``, after every one scheduled before it."""
    size = qt.shape[0] // 2
    if ctr[C_RING_N] == size:
        raise RuntimeError("fast engine: event ring overflow")
    j = ctr[C_RING_HEAD] + ctr[C_RING_N]
    _put(qt, qk, ctr, size + (j - size if j >= size else j), now, prio, kind, arg, gen)
    ctr[C_RING_N] += 1


@numba.njit(_nrt=False, inline="always")
def succeed(qt, qk, ctr, now, kind, arg, gen):
    """``event.succeed()``: an entry at the current time, after every one scheduled before it."""
    ring_push(qt, qk, ctr, now, NORMAL, kind, arg, gen)


@numba.njit(_nrt=False, inline="always")
def new_key(ctr, prio):
    """The key SimPy would give an event scheduled now (for an entry kept outside the queue)."""
    ctr[C_EID] += 1
    return prio * PRIO_SHIFT + ctr[C_EID] - 1


@numba.njit(_nrt=False)
def _heap_pop(qt, qk, ctr):
    """Remove the heap's top; returns the slot where its fields can still be read."""
    n = ctr[C_LEN] - 1
    _swap(qt, qk, 0, n)
    ctr[C_LEN] = n
    i = 0
    while 2 * i + 1 < n:
        c = 2 * i + 1
        if c + 1 < n and _before(qt, qk, c + 1, c):
            c += 1
        if not _before(qt, qk, c, i):
            break
        _swap(qt, qk, i, c)
        i = c
    return n


@numba.njit(_nrt=False, inline="always")
def peek(qt, qk, ctr):
    """Slot of the first entry (heap top or ring head), or -1 if there is none."""
    if ctr[C_RING_N] == 0:
        return 0 if ctr[C_LEN] > 0 else -1
    j = qt.shape[0] // 2 + ctr[C_RING_HEAD]
    return 0 if ctr[C_LEN] > 0 and _before(qt, qk, 0, j) else j


@numba.njit(_nrt=False, inline="always")
def take(qt, qk, ctr, j):
    """Remove the entry ``peek`` found; returns the slot where its fields can still be read."""
    if j == 0:
        return _heap_pop(qt, qk, ctr)
    ctr[C_RING_HEAD] = 0 if ctr[C_RING_HEAD] + 1 == qt.shape[0] // 2 else ctr[C_RING_HEAD] + 1
    ctr[C_RING_N] -= 1
    return j
