"""Typed, unit-checked scenario parameters: one declaration per key, one parser per unit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from xsim.units import UnitError, parse_bytes, parse_count, parse_gbps, parse_time_us


class ParamError(ValueError):
    """A parameter that is unknown, of the wrong unit, or out of range."""


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if not isinstance(value, (str, int)):
        raise UnitError(f"{value!r} is not a boolean (true/false)")
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise UnitError(f"{value!r} is not a boolean (true/false)")


def _as_int(value: Any) -> int:
    number = parse_count(value)
    if number != int(number):
        raise UnitError(f"{value!r} is not a whole number")
    return int(number)


def _as_str(value: Any) -> str:
    if not isinstance(value, str):
        raise UnitError(f"{value!r} is not a string")
    return value


PARSERS: dict[str, Callable[[Any], Any]] = {
    "bytes": parse_bytes, "us": parse_time_us, "gbps": parse_gbps,
    "int": _as_int, "float": parse_count, "bool": _as_bool, "str": _as_str,
}


@dataclass(frozen=True)
class Param:
    """A declared parameter: its unit kind, default, allowed range and what it means."""

    kind: str
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    exclusive_min: bool = False
    choices: tuple[str, ...] | None = None

    def parse(self, key: str, value: Any) -> Any:
        try:
            parsed = PARSERS[self.kind](value)
        except UnitError as exc:
            raise ParamError(f'"{key}": {exc}') from None
        if self.choices is not None and parsed not in self.choices:
            raise ParamError(f'"{key}" must be one of {", ".join(self.choices)}, got {parsed!r}')
        if self.minimum is not None:
            if parsed < self.minimum or (self.exclusive_min and parsed == self.minimum):
                op = ">" if self.exclusive_min else ">="
                raise ParamError(f'"{key}" must be {op} {self.minimum:g}, got {value!r}')
        if self.maximum is not None and parsed > self.maximum:
            raise ParamError(f'"{key}" must be <= {self.maximum:g}, got {value!r}')
        return parsed


def resolve(declared: Mapping[str, Param], given: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Defaults overlaid with ``given``; every key checked against ``declared``."""
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ParamError(f"{where}: unknown key {unknown[0]!r}; known keys: {', '.join(sorted(declared))}")
    values = {key: p.default for key, p in declared.items()}
    for key, value in given.items():
        values[key] = declared[key].parse(key, value)
    return values


def parse_assignment(text: str) -> tuple[str, str]:
    """``'gap_us=2.5'`` -> ``('gap_us', '2.5')``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise ParamError(f"--set expects KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()
