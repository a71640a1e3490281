"""The min-tree index: after any updates, its root is the minimum and its walk finds what a scan finds."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from xsim.des.min_tree import collect_due, node, tree_set


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from([np.inf, 1.0, 2.0]) | st.floats(0.0, 10.0)),
             max_size=120),
    st.floats(0.0, 10.0))))
def test_min_trees_find_what_a_scan_finds(case):
    """After any sequence of key updates, the root is the minimum and the walk collects exactly
    the leaves a scan finds at or below the threshold, each once (n need not be a power of two:
    leaves then sit on two levels, out of index order)."""
    n, updates, threshold = case
    leaves, inner = np.full(n, np.inf), np.full(n, np.inf)
    for k, value in updates:
        leaves[k] = value
        tree_set(inner, leaves, k)
    assert node(inner, leaves, 1) == leaves.min()
    seen, found = np.zeros(n, np.int64), np.zeros(n, np.int64)
    count = collect_due(inner, leaves, threshold, seen, found, 0)
    assert sorted(found[:count]) == list(np.flatnonzero(leaves <= threshold))  # fluid.snap sorts them
    assert not seen[leaves > threshold].any()
    assert collect_due(inner, leaves, threshold, seen, found, count) == count  # each leaf once


def test_one_leaf_is_its_own_root():
    leaves, inner = np.array([3.0]), np.full(1, np.inf)
    tree_set(inner, leaves, 0)
    assert node(inner, leaves, 1) == 3.0
