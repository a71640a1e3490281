"""Scenario builders: named parameters + a platform -> a :class:`~xsim.workload.Workload`.

A builder is one module in this package (a new builder is one new file; modules whose name
starts with ``_`` are not builders). It declares:

- ``PARAMS``: name -> :class:`~xsim.params.Param`, the scenario keys it accepts;
- ``build(params, platform)``: the :class:`~xsim.workload.Workload` of one point;
- ``predict(params, platform)``: the closed form's prediction for the same point (a dict,
  e.g. ``issue_us``, ``period_us``; what ``xsim simulate`` prints as ``closed_form`` and
  the sweep as ``pred_*``);
- ``summarize(result, params)``: the JSON summary of one run;
- ``size(params, platform) -> (tiles, horizon_us)``: the tile count and an upper bound of the
  simulated time, known before anything is allocated (:mod:`xsim.budget` refuses a run the
  machine cannot hold).

``BUILDERS`` names every builder module found here, sorted.
"""

from __future__ import annotations

import pkgutil
from importlib import import_module

BUILDERS = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")))


def get_builder(name: str):
    if name not in BUILDERS:
        raise KeyError(name)
    return import_module(f"xsim.builders.{name}")
