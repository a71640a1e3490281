"""The fast engine's counters, staging slots and finished-tile FIFO: SimPy's Container and Store.

Mirrors :class:`xsim.des.simpy_engine.Counters` and, per producer, the ``simpy.Container`` of
staging slots and the ``simpy.Store`` of finished tiles, on the arrays of
:mod:`xsim.des.fast_state`: a request served at once schedules its event now; otherwise the
requester is remembered and served when the matching put is processed.
"""

from __future__ import annotations

from xsim.des.event_queue import succeed
from xsim.des.fast_state import INT_MAX, K_MMA, K_STORE_GET, CounterI, ProducerI
from xsim.des.jit import inline, jit


@jit
def counter_wait(producers, counters, p, c, value, now, q):
    """Counters.wait: producer p's mainloop resumes once counter c reaches ``value``."""
    if counters[c, CounterI.VALUE] >= value:
        succeed(q, now, K_MMA, p, 0)
        return
    producers[p, ProducerI.WAIT_VALUE], producers[p, ProducerI.WAIT_NEXT] = value, -1
    if counters[c, CounterI.TAIL] >= 0:
        producers[counters[c, CounterI.TAIL], ProducerI.WAIT_NEXT] = p
    else:
        counters[c, CounterI.HEAD] = p
    counters[c, CounterI.TAIL] = p
    counters[c, CounterI.MIN_WAIT] = min(counters[c, CounterI.MIN_WAIT], value)


@jit
def counter_signal(producers, counters, c, now, q):
    """Counters.signal: wake, in waiting order, every mainloop whose threshold is now met."""
    counters[c, CounterI.VALUE] += 1
    value = counters[c, CounterI.VALUE]
    if value < counters[c, CounterI.MIN_WAIT]:
        return  # nobody's threshold is met: the walk would wake no one
    prev, p, lowest = -1, counters[c, CounterI.HEAD], INT_MAX
    while p >= 0:
        nxt = producers[p, ProducerI.WAIT_NEXT]
        if value >= producers[p, ProducerI.WAIT_VALUE]:
            succeed(q, now, K_MMA, p, 0)
            if prev >= 0:
                producers[prev, ProducerI.WAIT_NEXT] = nxt
            else:
                counters[c, CounterI.HEAD] = nxt
            if counters[c, CounterI.TAIL] == p:
                counters[c, CounterI.TAIL] = prev
        else:
            prev, lowest = p, min(lowest, producers[p, ProducerI.WAIT_VALUE])
        p = nxt
    counters[c, CounterI.MIN_WAIT] = lowest


@inline
def slot_get(producers, p, now, q):
    """Container.get(1): served at once if a slot is free, else when a put is processed."""
    if producers[p, ProducerI.SLOTS] >= 1:
        producers[p, ProducerI.SLOTS] -= 1
        succeed(q, now, K_MMA, p, 0)
    else:
        producers[p, ProducerI.MMA_WAITS_SLOT] = 1


@inline
def fifo_get(producers, p, now, q):
    """Store.get(): the oldest finished tile, at once if there is one, else when a put is processed."""
    if producers[p, ProducerI.FIFO_HEAD] < producers[p, ProducerI.FIFO_TAIL]:
        producers[p, ProducerI.ISS_TILE] = producers[p, ProducerI.FIFO_HEAD]
        producers[p, ProducerI.FIFO_HEAD] += 1
        producers[p, ProducerI.ISS_WAITS_TILE] = 0
        succeed(q, now, K_STORE_GET, p, 0)
    else:
        producers[p, ProducerI.ISS_WAITS_TILE] = 1
