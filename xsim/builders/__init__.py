"""Scenario builders: named parameters + a platform -> a :class:`~xsim.workload.Workload`.

A builder module declares ``PARAMS`` (name -> :class:`~xsim.params.Param`), ``build(params,
platform)`` and ``summarize(result, params)`` (the JSON summary of one run).
"""

from __future__ import annotations

from importlib import import_module

BUILDERS = ("microbench", "fa_a2a")


def get_builder(name: str):
    if name not in BUILDERS:
        raise KeyError(name)
    return import_module(f"xsim.builders.{name}")
