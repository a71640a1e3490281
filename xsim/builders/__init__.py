"""Scenario builders: named parameters + a platform -> a :class:`~xsim.workload.Workload`.

A builder module declares ``PARAMS`` (name -> :class:`~xsim.params.Param`), ``build(params,
platform)``, ``summarize(result, params)`` (the JSON summary of one run) and ``size(params,
platform) -> (tiles, horizon_us)``: the tile count and an upper bound of the simulated time,
known before anything is allocated (:mod:`xsim.budget` refuses a run the machine cannot hold).
"""

from __future__ import annotations

from importlib import import_module

BUILDERS = ("microbench", "fa_a2a", "moe")


def get_builder(name: str):
    if name not in BUILDERS:
        raise KeyError(name)
    return import_module(f"xsim.builders.{name}")
