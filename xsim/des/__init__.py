"""Discrete-event simulation of the X-Stage: SimPy reference engine and its fast twin.

Both engines implement the semantics documented in ``docs/simulator.md`` (its map lists the
modules) and share the fluid arithmetic in :mod:`xsim.des.fluid` and
:mod:`xsim.des.water_fill`; :func:`simulate` picks one by name.
"""

from __future__ import annotations

ENGINES = ("simpy", "fast")


def simulate(workload, engine: str = "simpy", trace: bool = True):
    """Run ``workload`` (an :class:`xsim.workload.Workload`) on the named engine."""
    if engine == "simpy":
        from xsim.des.simpy_engine import run
    elif engine == "fast":
        from xsim.des.fast_engine import run
    else:
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    return run(workload, trace=trace)
