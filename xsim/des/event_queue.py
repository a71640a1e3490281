"""SimPy's event queue for the fast engine: a heap for timeouts, a FIFO ring for "now".

SimPy orders scheduled events by (time, priority, insertion number). Entries triggered at the
current time (``event.succeed()``) carry the largest keys so far, so a FIFO ring keeps them
sorted, and merging the ring's head with the heap's top by (time, key) gives exactly SimPy's
order at a fraction of the heap's cost.

A :class:`Queue` is three arrays: ``time`` (float, one per slot), ``entry`` (int, one row per
slot, columns :data:`Entry`) and ``count`` (int, :data:`Count`). Slots ``0..size`` hold the
heap, slots ``size..2 * size`` the ring. An entry's kind, argument and generation are the
caller's to interpret. Nothing here allocates.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from xsim.des.jit import inline, jit
from xsim.des.layout import columns, layout

URGENT, NORMAL = 0, 1          # SimPy's priorities: Initialize is urgent, everything else normal
PRIO_SHIFT = 1 << 62           # queue key = priority * PRIO_SHIFT + insertion number
Entry = layout("Entry", "KEY KIND ARG GEN")                     # columns of Queue.entry
Count = layout("Count", "HEAP_LEN NEXT_EID RING_HEAD RING_LEN")  # Queue.count
ENTRY_WIDTH = len(Entry)


class Queue(NamedTuple):
    time: np.ndarray    # float[2 size]: the entry's time, per slot
    entry: np.ndarray   # int[2 size, Entry]: its key, kind, argument and generation, per slot
    count: np.ndarray   # int[Count]: heap length, next insertion number, ring head and length


def empty(size: int) -> Queue:
    """A queue with room for ``size`` pending timeouts and ``size`` entries triggered now."""
    return Queue(np.zeros(2 * size), columns(Entry, 2 * size, np.int64), np.zeros(len(Count), np.int64))


@inline
def _before(q, a, b):
    return q.time[a] < q.time[b] or (q.time[a] == q.time[b] and q.entry[a, Entry.KEY] < q.entry[b, Entry.KEY])


@inline
def _swap(q, a, b):
    q.time[a], q.time[b] = q.time[b], q.time[a]
    for c in range(ENTRY_WIDTH):
        q.entry[a, c], q.entry[b, c] = q.entry[b, c], q.entry[a, c]


@inline
def _put(q, j, t, prio, kind, arg, gen):
    q.time[j] = t
    e = q.entry
    e[j, Entry.KEY], e[j, Entry.KIND], e[j, Entry.ARG], e[j, Entry.GEN] = prio * PRIO_SHIFT + q.count[Count.NEXT_EID], kind, arg, gen
    q.count[Count.NEXT_EID] += 1


@jit
def timeout(q, t, kind, arg, gen=0):
    """``env.timeout``: a heap entry at time ``t``."""
    n = q.count[Count.HEAP_LEN]
    if n == q.time.shape[0] // 2:
        raise RuntimeError("fast engine: event heap overflow")
    _put(q, n, t, NORMAL, kind, arg, gen)
    q.count[Count.HEAP_LEN] = n + 1
    _sift_up(q, n)


@inline
def _sift_up(q, i):
    """The heap entry in slot i moves up to its place."""
    while i > 0 and _before(q, i, (i - 1) // 2):
        _swap(q, i, (i - 1) // 2)
        i = (i - 1) // 2
    return i


@inline
def _sift_down(q, i, n):
    """The entry in slot i of a heap of n entries moves down to its place."""
    while 2 * i + 1 < n:
        c = 2 * i + 1
        if c + 1 < n and _before(q, c + 1, c):
            c += 1
        if not _before(q, c, i):
            break
        _swap(q, i, c)
        i = c


@inline
def ring_push(q, now, prio, kind, arg, gen):
    """An entry at the current time with priority ``prio``, after every one scheduled before it."""
    size = q.time.shape[0] // 2
    if q.count[Count.RING_LEN] == size:
        raise RuntimeError("fast engine: event ring overflow")
    j = q.count[Count.RING_HEAD] + q.count[Count.RING_LEN]
    _put(q, size + (j - size if j >= size else j), now, prio, kind, arg, gen)
    q.count[Count.RING_LEN] += 1


@jit
def ring_push_urgent(q, now, kind, arg, gen):
    """An urgent entry at the current time (SimPy's ``Process.interrupt``): after every urgent one
    scheduled before it, before every normal one. Urgent entries sit at the ring's head (they have
    the smallest keys), so the head moves back one slot and the urgent ones before it move with it."""
    size = q.time.shape[0] // 2
    if q.count[Count.RING_LEN] == size:
        raise RuntimeError("fast engine: event ring overflow")
    head = q.count[Count.RING_HEAD]
    new_head = head - 1 if head > 0 else size - 1
    j, m = head, new_head
    for _ in range(q.count[Count.RING_LEN]):   # the urgent prefix moves one slot toward the new head
        if q.entry[size + j, Entry.KEY] >= PRIO_SHIFT:
            break
        q.time[size + m] = q.time[size + j]
        for c in range(ENTRY_WIDTH):
            q.entry[size + m, c] = q.entry[size + j, c]
        m, j = j, j + 1 if j + 1 < size else 0
    _put(q, size + m, now, URGENT, kind, arg, gen)
    q.count[Count.RING_HEAD] = new_head
    q.count[Count.RING_LEN] += 1


@inline
def succeed(q, now, kind, arg, gen):
    """``event.succeed()``: an entry at the current time, after every one scheduled before it."""
    ring_push(q, now, NORMAL, kind, arg, gen)


@inline
def new_key(q, prio):
    """The key SimPy would give an event scheduled now (for an entry kept outside the queue)."""
    q.count[Count.NEXT_EID] += 1
    return prio * PRIO_SHIFT + q.count[Count.NEXT_EID] - 1


@jit
def _heap_pop(q):
    """Remove the heap's top; returns the slot where its fields can still be read."""
    n = q.count[Count.HEAP_LEN] - 1
    _swap(q, 0, n)
    q.count[Count.HEAP_LEN] = n
    _sift_down(q, 0, n)
    return n


@jit
def heap_remove(q, kind, arg, gen):
    """Drop the heap's entry (kind, arg, gen), if there is one: a timeout SimPy would process without
    effect (an interrupted process's), which would otherwise hold a slot until its time. The
    others keep their order. Returns whether it was there."""
    n = q.count[Count.HEAP_LEN]
    for j in range(n):
        if q.entry[j, Entry.KIND] == kind and q.entry[j, Entry.ARG] == arg and q.entry[j, Entry.GEN] == gen:
            n -= 1
            q.count[Count.HEAP_LEN] = n
            if j < n:   # the last entry takes its slot, then moves up or down to its place
                _swap(q, j, n)
                _sift_down(q, _sift_up(q, j), n)
            return True
    return False


@inline
def peek(q):
    """Slot of the first entry (heap top or ring head), or -1 if there is none."""
    if q.count[Count.RING_LEN] == 0:
        return 0 if q.count[Count.HEAP_LEN] > 0 else -1
    j = q.time.shape[0] // 2 + q.count[Count.RING_HEAD]
    return 0 if q.count[Count.HEAP_LEN] > 0 and _before(q, 0, j) else j


@inline
def take(q, j):
    """Remove the entry ``peek`` found; returns the slot where its fields can still be read."""
    if j == 0:
        return _heap_pop(q)
    size = q.time.shape[0] // 2
    q.count[Count.RING_HEAD] = 0 if q.count[Count.RING_HEAD] + 1 == size else q.count[Count.RING_HEAD] + 1
    q.count[Count.RING_LEN] -= 1
    return j
