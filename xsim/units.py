"""Units: the one module that converts between them.

Internal units of the simulator are microseconds and bytes, so rates are bytes per
microsecond. The paper's conventions: GB/s = 1e9 bytes/s, MiB = 2**20 bytes, and "KB" in
tile sizes = 1024 bytes.
"""

from __future__ import annotations

import math
import re

KIB = 1024
MIB = 1024**2
GIB = 1024**3

BYTES_PER_UNIT = {
    "b": 1, "kb": KIB, "kib": KIB, "mb": MIB, "mib": MIB, "gb": GIB, "gib": GIB,
}
US_PER_UNIT = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}
GBPS_PER_UNIT = {"gbps": 1.0, "gb/s": 1.0, "tb/s": 1e3, "tbps": 1e3}

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-zA-Zµ/]*)\s*$")


class UnitError(ValueError):
    """A value that is not a number, or carries a unit of the wrong kind."""


def gbps_to_bytes_per_us(gbps: float) -> float:
    """GB/s (1e9 bytes per second) to bytes per microsecond."""
    return gbps * 1e3


def bytes_per_us_to_gbps(bytes_per_us: float) -> float:
    """Bytes per microsecond to GB/s (1e9 bytes per second)."""
    return bytes_per_us * 1e-3


def drain_time_us(volume_bytes: float, drain_rate_gbps: float) -> float:
    """Time to move ``volume_bytes`` at ``drain_rate_gbps``: V / R in microseconds."""
    return volume_bytes / gbps_to_bytes_per_us(drain_rate_gbps)


def _parse(text: str, table: dict[str, float], default_unit: str, what: str) -> float:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        try:
            value = float(text)
        except OverflowError:
            raise UnitError(f"{what} {text!r} is too large") from None
        if not math.isfinite(value):
            raise UnitError(f"{what} {text!r} is not finite")
        return value
    if not isinstance(text, str):
        raise UnitError(f"{what} must be a number or a string, got {type(text).__name__}")
    match = _QUANTITY.match(str(text))
    if not match:
        raise UnitError(f"{what} {text!r} is not a number")
    number, unit = float(match.group(1)), match.group(2).lower() or default_unit
    if unit not in table:
        kinds = ", ".join(sorted(table))
        raise UnitError(f"{what} {text!r} has unit {match.group(2)!r}; expected one of: {kinds}")
    value = number * table[unit]
    if not math.isfinite(value):
        raise UnitError(f"{what} {text!r} is not finite")
    return value


def parse_bytes(text: str | float) -> float:
    """``'32KB'``, ``'4.25MiB'`` or a plain number of bytes -> bytes (KB = 1024 bytes)."""
    return _parse(text, BYTES_PER_UNIT, "b", "byte size")


def parse_time_us(text: str | float) -> float:
    """``'2us'``, ``'500ns'``, ``'1.5ms'`` or a plain number of microseconds -> microseconds."""
    return _parse(text, US_PER_UNIT, "us", "time")


def parse_gbps(text: str | float) -> float:
    """``'717GB/s'``, ``'0.7TB/s'`` or a plain number of GB/s -> GB/s."""
    return _parse(text, GBPS_PER_UNIT, "gbps", "rate")


def parse_count(text: str | float) -> float:
    """A dimensionless number; rejects a value that carries any unit."""
    return _parse(text, {"": 1.0}, "", "count")


def parser_for_key(key: str):
    """The parser implied by a parameter's name: ``*_bytes``, ``*_us``, ``*_gbps`` or a count."""
    if key.endswith("_bytes"):
        return parse_bytes
    if key.endswith("_us"):
        return parse_time_us
    if key.endswith("_gbps"):
        return parse_gbps
    return parse_count
