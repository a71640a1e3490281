"""Scenarios: named workloads as TOML data, each shape with its source.

A scenario file::

    name = "periodic"
    builder = "microbench"
    description = "..."
    platform = "h200-pcie-host"   # optional: the profile it is written for, the default of
                                  # xsim simulate / sweep (--platform still chooses another)
    [params]            # keys declared by the builder, units in their names
    producers = 132
    burst_bytes = "32KB"
    [sources]           # where every shape comes from
    producers = "one CTA per SM of an H200 (132 SMs)"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from xsim.builders import BUILDERS, get_builder
from xsim.fileio import decode, parse_toml, read_bytes
from xsim.params import ParamError, parse_assignment, resolve
from xsim.platform import Platform


class ScenarioError(ValueError):
    """A scenario that cannot be found, read or built."""


@dataclass(frozen=True)
class Scenario:
    name: str
    builder: str
    params: Mapping[str, Any]          # resolved: every declared key, parsed to its unit
    description: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)
    origin: str = ""
    platform: str = ""                 # the profile it is written for ("": the command's default)

    @property
    def module(self):
        return get_builder(self.builder)

    def with_overrides(self, assignments: list[str]) -> "Scenario":
        """Apply ``--set KEY=VALUE`` assignments; an unknown key or bad unit is a ScenarioError."""
        given = dict(self.params)
        try:
            for text in assignments:
                key, value = parse_assignment(text)
                given[key] = value
            params = resolve(self.module.PARAMS, given, f"scenario {self.name!r}")
        except ParamError as exc:
            raise ScenarioError(str(exc)) from None
        return replace(self, params=params)

    def estimate(self, platform: Platform, engine: str = "simpy", trace: bool = True, outputs: bool = False):
        """What simulating this scenario would take (:class:`xsim.budget.Estimate`)."""
        from xsim.budget import estimate

        try:
            return estimate(self.module, dict(self.params), platform, engine, trace, outputs)
        except ValueError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {exc}") from None

    def build(self, platform: Platform, engine: str = "simpy", trace: bool = True, outputs: bool = False):
        """The workload; refused (BudgetError, with the estimate) if the machine cannot hold the run."""
        self.estimate(platform, engine, trace, outputs).require(f"scenario {self.name!r}")
        try:
            return self.module.build(dict(self.params), platform)
        except ValueError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {exc}") from None

    def simulate(self, platform: Platform, engine: str, trace: bool = True):
        """(a result, the summary): the builder's own runs where it has them (``module.simulate``: moe's
        both schedules, fa_a2a's clock law), else its workload through the DES."""
        if not hasattr(self.module, "simulate"):
            from xsim.des import simulate

            result = simulate(self.build(platform, engine=engine, trace=trace), engine=engine, trace=trace)
            return result, self.summarize(result)
        try:
            return self.module.simulate(dict(self.params), platform, engine, trace=trace)
        except ValueError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {exc}") from None

    def predict(self, platform: Platform) -> dict:
        return self.module.predict(dict(self.params), platform)

    def summarize(self, result) -> dict:
        return self.module.summarize(result, dict(self.params))


def from_dict(data: Mapping[str, Any], origin: str) -> Scenario:
    for key in ("name", "builder"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ScenarioError(f"{origin}: missing or empty string {key!r}")
    unknown = sorted(set(data) - {"name", "builder", "description", "platform", "params", "sources"})
    if unknown:
        raise ScenarioError(f"{origin}: unknown top-level key {unknown[0]!r}")
    if data["builder"] not in BUILDERS:
        raise ScenarioError(f"{origin}: unknown builder {data['builder']!r}; known: {', '.join(BUILDERS)}")
    params = data.get("params", {})
    if not isinstance(params, Mapping):
        raise ScenarioError(f"{origin}: [params] must be a table")
    for key in ("description", "platform"):
        if not isinstance(data.get(key, ""), str):
            raise ScenarioError(f"{origin}: \"{key}\" must be a string")
    sources = data.get("sources", {})
    if not isinstance(sources, Mapping):
        raise ScenarioError(f"{origin}: [sources] must be a table of strings")
    for key, value in sources.items():
        if not isinstance(value, str):
            raise ScenarioError(f"{origin}: [sources] {key!r} must be a string, got {type(value).__name__}")
    try:
        resolved = resolve(get_builder(data["builder"]).PARAMS, params, origin)
    except ParamError as exc:
        raise ScenarioError(str(exc)) from None
    return Scenario(name=data["name"], builder=data["builder"], params=resolved,
                    description=data.get("description", ""), sources=dict(sources),
                    origin=origin, platform=data.get("platform", ""))


def _shipped_dir():
    return resources.files("scenarios")


def shipped_scenarios() -> dict[str, Scenario]:
    found = {}
    for entry in sorted(_shipped_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            scenario = from_dict(parse_toml(entry.read_text()), f"shipped scenario {entry.name}")
            found[scenario.name] = scenario
    return found


def load_scenario(name_or_path: str) -> Scenario:
    """A shipped scenario by name, or a TOML file by path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or (path.exists() and not path.is_dir()):
        text = decode(read_bytes(path, "scenario", ScenarioError), f"scenario {path}", ScenarioError)
        try:
            data = parse_toml(text)
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioError(f"scenario {path} is not valid TOML: {exc}") from None
        except ValueError as exc:  # a non-finite number, an integer too long to read
            raise ScenarioError(f"scenario {path}: {exc}") from None
        return from_dict(data, f"scenario {path}")
    shipped = shipped_scenarios()
    if name_or_path in shipped:
        return shipped[name_or_path]
    raise ScenarioError(f"unknown scenario {name_or_path!r}; shipped: {', '.join(sorted(shipped))} (or give a .toml file)")
