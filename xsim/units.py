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


def tbps_to_bytes_per_us(tbps: float) -> float:
    """TB/s (1e12 bytes per second) to bytes per microsecond."""
    return tbps * 1e6


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


# --- formatting for people (tables, captions); --json keeps plain numbers ------------------

_BYTE_STEPS = ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB"))
_TIME_STEPS_US = ((1e6, "s"), (1e3, "ms"))
BLANK = "–"  # what a missing (None/NaN) value is shown as


def _sig(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, no exponent for ordinary magnitudes."""
    if value == 0:
        return "0"
    if abs(value) >= 10**digits:
        return f"{value:.0f}"
    return f"{value:.{digits}g}"


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def _stepped(value: float | None, steps, base_name: str) -> str:
    """``value`` in the largest unit of ``steps`` ((size, name), largest first) it reaches."""
    if _missing(value):
        return BLANK
    for size, name in steps:
        if abs(value) >= size:
            return f"{_sig(value / size)} {name}"
    return f"{_sig(value)} {base_name}"


def format_bytes(n_bytes: float | None) -> str:
    """``4325376`` -> ``'4.12 MiB'``; ``512`` -> ``'512 B'`` (KiB = 1024 bytes)."""
    return _stepped(n_bytes, _BYTE_STEPS, "B")


def format_us(t_us: float | None) -> str:
    """Microseconds -> ``'0.54 µs'``, ``'2.45 ms'``, ``'1.2 s'``."""
    return _stepped(t_us, _TIME_STEPS_US, "µs")


def format_gbps(rate_gbps: float | None) -> str:
    """GB/s (1e9 bytes per second) -> ``'360 GB/s'``."""
    return BLANK if _missing(rate_gbps) else f"{_sig(rate_gbps)} GB/s"


def format_percent(percent: float | None) -> str:
    """A percentage (already times 100) -> ``'3.42%'``."""
    return BLANK if _missing(percent) else f"{_sig(percent)}%"


def format_count(value) -> str:
    """A plain number: integers as they are, floats to 4 significant digits."""
    if _missing(value):
        return BLANK
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


FORMATTERS = {"bytes": format_bytes, "us": format_us, "gbps": format_gbps, "percent": format_percent,
              "count": format_count}


def unit_of_key(key: str) -> str:
    """The unit a name carries: ``*_bytes``, ``*_us``, ``*_gbps``, ``*_mape``/``*_percent``, else count."""
    if key.endswith("_bytes"):
        return "bytes"
    if key.endswith("_us"):
        return "us"
    if key.endswith("_gbps"):
        return "gbps"
    if key.endswith(("_mape", "_percent", "_pct")):
        return "percent"
    return "count"


def human(value, unit: str = "count") -> str:
    """The one formatter for people: ``human(4.3e6, "bytes") == '4.1 MiB'``.

    ``unit`` is ``bytes``, ``us``, ``gbps``, ``percent`` or ``count``; None/NaN is ``BLANK``;
    a value that is not a number (a name, a note) is shown as it is.
    """
    if unit not in FORMATTERS:
        raise UnitError(f"unit {unit!r} is not one of: {', '.join(FORMATTERS)}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "item"):
        return format_count(value)
    value = value.item() if hasattr(value, "item") else value
    return FORMATTERS[unit](value)


def human_key(key: str, value) -> str:
    """``value`` formatted by the unit its name carries (``human_key("capacity_bytes", 2**21)``)."""
    return human(value, unit_of_key(key))
