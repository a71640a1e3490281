"""A min-tree over one row of event keys: the fast engine's index of due producers.

The reference engine scans every producer for due events; the fast engine asks these trees,
which find exactly the producers a scan finds (tests/test_min_tree.py). A tree over ``n``
leaves ``leaves[0 .. n - 1]`` keeps its inner nodes in ``inner[1 .. n - 1]``: node ``i >= n``
is leaf ``i - n``; an inner node ``1 <= i < n`` holds ``min(node 2i, node 2i + 1)``. Node 1
is the minimum. When n is not a power of two the leaves sit on two levels, out of index order.
"""

from __future__ import annotations

from xsim.des.jit import jit


@jit
def node(inner, leaves, i):
    """The value of node ``i``."""
    n = leaves.shape[0]
    return inner[i] if i < n else leaves[i - n]


@jit
def tree_set(inner, leaves, k):
    """Leaf k changed: recompute its ancestors (stopping where a minimum does not change)."""
    i = (leaves.shape[0] + k) // 2
    while i >= 1:
        m = min(node(inner, leaves, 2 * i), node(inner, leaves, 2 * i + 1))
        if inner[i] == m:
            return
        inner[i] = m
        i //= 2


@jit
def collect_due(inner, leaves, threshold, seen, found, count):
    """Append to ``found`` (from ``count``) every leaf whose key is <= ``threshold`` and not yet
    collected (``seen[k] == 0``; it is set); a depth-first walk that skips subtrees whose
    minimum is above it. Returns the new count."""
    n, i = leaves.shape[0], 1
    while i > 0:
        if node(inner, leaves, i) <= threshold:
            if i >= n:
                if seen[i - n] == 0:
                    seen[i - n] = 1
                    found[count] = i - n
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
