"""Declared array layouts: the engines' state is a few 2-D arrays, each with named rows or columns.

A layout is an :class:`enum.IntEnum` of the names of one array's rows (or columns), numbered
from 0 in the order declared; the array's width is ``len(layout)``, never a literal. numba
reads the members as compile-time constants, so ``x[Fluid.Q0, k]`` costs what ``x[0, k]`` does.

One rule keeps the arrays readable: **one index space per array**. Every array is indexed
by one kind of thing along the axis the layout does not name (a tile, a producer, a counter,
a stage, a position in a list, a node of a tree), and its name says which.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np


def layout(name: str, fields: str) -> type[IntEnum]:
    """The layout ``name`` with the given whitespace-separated field names, numbered from 0."""
    return IntEnum(name, fields.split(), start=0)


def rows(fields: type[IntEnum], n: int, dtype=float, fill=0) -> np.ndarray:
    """A ``(len(fields), n)`` array: one row per field, one column per item."""
    return np.full((len(fields), n), fill, dtype=dtype)


def columns(fields: type[IntEnum], n: int, dtype=float, fill=0) -> np.ndarray:
    """An ``(n, len(fields))`` array: one row per item, one column per field."""
    return np.full((n, len(fields)), fill, dtype=dtype)
