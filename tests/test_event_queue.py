"""The fast engine's event queue pops entries in SimPy's order: (time, priority, insertion)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from xsim.des import event_queue as eq
from xsim.des.event_queue import Count, Entry
from xsim.des.jit import jit


@jit
def _drain(q, out):
    n = 0
    while True:
        j = eq.peek(q)
        if j < 0:
            return n
        j = eq.take(q, j)
        out[n, 0], out[n, 1] = q.time[j], q.entry[j, Entry.ARG]
        n += 1


@jit
def _push(q, now, is_timeout, t, arg):
    if is_timeout:
        eq.timeout(q, t, 0, arg)
    else:
        eq.succeed(q, now, 0, arg, 0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from([0.0, 1.0, 2.0]) | st.floats(0.0, 5.0)), max_size=40))
def test_entries_come_out_in_simpy_order(pushes):
    """Timeouts at any time and entries triggered now (t = 0), pushed in any order, come out
    sorted by time, then by insertion (every entry here is NORMAL)."""
    q = eq.empty(64)
    for arg, (is_timeout, t) in enumerate(pushes):
        _push(q, 0.0, is_timeout, t, arg)
    out = np.zeros((len(pushes) + 1, 2))
    n = _drain(q, out)
    expected = sorted(range(len(pushes)), key=lambda a: (pushes[a][1] if pushes[a][0] else 0.0, a))
    assert n == len(pushes) and list(out[:n, 1].astype(int)) == expected
    assert q.count[Count.HEAP_LEN] == 0 and q.count[Count.RING_LEN] == 0


def test_urgent_entries_go_before_normal_ones_at_the_same_time():
    q = eq.empty(8)
    eq.timeout(q, 0.0, 0, 0)            # NORMAL at t = 0, inserted first
    eq.ring_push(q, 0.0, eq.URGENT, 0, 1, 0)
    out = np.zeros((3, 2))
    assert _drain(q, out) == 2 and list(out[:2, 1]) == [1.0, 0.0]


def test_new_key_is_the_next_insertion_number():
    q = eq.empty(4)
    eq.succeed(q, 0.0, 0, 0, 0)
    assert eq.new_key(q, eq.NORMAL) == eq.NORMAL * eq.PRIO_SHIFT + 1
    assert q.count[Count.NEXT_EID] == 2


@jit
def _push_any(q, now, how, t, arg):
    if how == 0:
        eq.timeout(q, t, 0, arg)
    elif how == 1:
        eq.succeed(q, now, 0, arg, 0)
    else:
        eq.ring_push_urgent(q, now, 0, arg, 0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0.0, 1.0]) | st.floats(0.0, 3.0)), max_size=40),
       st.lists(st.integers(0, 39), max_size=10))
def test_urgent_pushes_and_heap_removals_keep_simpy_order(pushes, removed):
    """Interrupts (urgent entries at now) among timeouts and entries triggered now, some timeouts
    removed again (an interrupted process's): what is left comes out in SimPy's order, urgent
    before normal at t = 0, each by insertion."""
    q = eq.empty(64)
    for arg, (how, t) in enumerate(pushes):
        _push_any(q, 0.0, how, t, arg)
    gone = {a for a in removed if a < len(pushes) and pushes[a][0] == 0}
    for a in sorted(gone):
        assert eq.heap_remove(q, 0, a, 0)
    assert not eq.heap_remove(q, 0, 99, 0)
    out = np.zeros((len(pushes) + 1, 2))
    n = _drain(q, out)
    left = [a for a in range(len(pushes)) if a not in gone]
    key = lambda a: (pushes[a][1] if pushes[a][0] == 0 else 0.0, 0 if pushes[a][0] == 2 else 1, a)
    assert n == len(left) and list(out[:n, 1].astype(int)) == sorted(left, key=key)
