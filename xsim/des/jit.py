"""What numba compiles, and the rules that keep its cache safe.

Compilation is explicit: a function is compiled only if its definition carries one of these
decorators. Everything is compiled without numba's runtime (``_nrt=False``): no compiled
function allocates, so no reference counting of the arrays passed on every event (a function
compiled without the runtime must never return an array to one compiled with it).

- :data:`jit`: compiled on first call for each argument type (the fluid arithmetic, which
  both engines call; the fast engine's functions that are too big to inline);
- :data:`inline`: compiled into its caller (the fast engine's per-event functions; about half
  the cost of an entry);
- :func:`cached_kernel`: the one function compiled once and kept in numba's on-disk cache
  (the fast engine's loop, which links in everything else).

**The cache rules.** (1) numba checks a cached kernel against its own source file only, not
against the modules whose functions it links in: :func:`cached_kernel` names the cache entry
after a digest of every module listed, so editing any of them recompiles. List every module
the kernel reaches. (2) Give the compiled functions 1-D rows or 'A'-layout column views of
2-D arrays (``a[:, lo:hi]``), as the fast engine does: kernels that passed C-contiguous 2-D
views were compiled correctly but crashed when loaded from the cache in a fresh process
(numba 0.68.1, docs/performance.md).
"""

from __future__ import annotations

import hashlib
import inspect

import numba

jit = numba.njit(_nrt=False)
inline = numba.njit(_nrt=False, inline="always")


def source_digest(modules) -> str:
    """A short digest of the modules' source."""
    source = "".join(inspect.getsource(m) for m in modules)
    return hashlib.sha1(source.encode()).hexdigest()[:12]


def cached_kernel(*modules):
    """Decorator: compile ``fn`` with numba's on-disk cache, its cache entry named after a digest of
    ``fn``'s module and of ``modules`` (every module whose compiled functions ``fn`` links in)."""
    def decorate(fn):
        fn.__qualname__ = f"{fn.__name__}_{source_digest((inspect.getmodule(fn), *modules))}"
        return numba.njit(cache=True, _nrt=False)(fn)
    return decorate
