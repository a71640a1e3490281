"""Options and rendering shared by commands: platform options, JSON/table output."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any, Mapping

from xsim.load_gate import MODES, SCOPES
from xsim.params import ParamError
from xsim.platform import Platform, resolve_platform
from xsim.units import UnitError, format_count, parse_bytes, parse_gbps, parse_time_us


def unit_arg(parse):
    """An argparse ``type`` from a unit parser: its message, not argparse's generic one."""
    def convert(text: str) -> float:
        try:
            return parse(text)
        except UnitError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = parse.__name__
    return convert


def add_platform_options(parser) -> None:
    group = parser.add_argument_group("platform (each option overrides the profile)")
    group.add_argument("--platform", metavar="NAME|FILE", help="shipped profile name or profile JSON file")
    group.add_argument("--t-iss0-us", metavar="US", type=unit_arg(parse_time_us), help="constant backpressure-free issue time")
    group.add_argument("--drain-gbps", metavar="GBPS", type=unit_arg(parse_gbps), help="effective drain rate R")
    group.add_argument("--capacity-bytes", metavar="BYTES", type=unit_arg(parse_bytes), help="constant outstanding capacity Q")
    group.add_argument("--load-gate-bytes", metavar="BYTES|none", type=unit_arg(parse_gate_bytes),
                       help="load gate threshold: a mainloop that loads memory starts once the occupancy is <= this "
                            "(none: no gate)")
    group.add_argument("--load-gate-scope", choices=SCOPES,
                       help="whose occupancy the load gate sees: the producer's own bytes, the whole link's, or "
                            "(fifo) the link's bytes that were ahead of the mainloop when it began to wait")
    group.add_argument("--load-gate-mode", choices=MODES,
                       help="when the load gate holds a mainloop: before it starts only, or (stall) also while it "
                            "runs, pausing it whenever the occupancy is above the threshold")


def parse_gate_bytes(text: str) -> float:
    """A load gate threshold: bytes, or ``none`` (no gate: an infinite threshold)."""
    if text.strip().lower() in ("none", "off"):
        return math.inf
    return parse_bytes(text)


def platform_from_args(args, name_or_path: str | None = None) -> Platform:
    """The platform named by ``--platform`` (or ``name_or_path`` when given) with the overrides applied."""
    for name in ("t_iss0_us", "drain_gbps", "capacity_bytes"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise ParamError(f"--{name.replace('_', '-')} must be > 0, got {value:g}")
    gate_bytes, gate_scope = getattr(args, "load_gate_bytes", None), getattr(args, "load_gate_scope", None)
    gate_mode = getattr(args, "load_gate_mode", None)
    if gate_bytes is not None and not gate_bytes >= 0:
        raise ParamError(f"--load-gate-bytes must be >= 0, got {gate_bytes:g}")
    platform = resolve_platform(args.platform if name_or_path is None else name_or_path)
    return platform.with_overrides(args.t_iss0_us, args.drain_gbps, args.capacity_bytes, gate_bytes, gate_scope,
                                  gate_mode)


def add_json_option(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of a table")


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        return _clean(value.item())
    return value


def print_json(document: Any) -> None:
    json.dump(_clean(document), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def fmt(value: Any) -> str:
    """A cell as given; a bare number (no unit known here) through :func:`xsim.units.format_count`.
    Callers format quantities with their units first (``xsim.units.human_key``)."""
    return format_count(value)


def print_table(title: str, rows: list[tuple[str, Any]] | list[list[Any]], header: list[str] | None = None) -> None:
    """A plain table on stdout (rich when available and stdout is a terminal)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_header=header is not None)
    for name in header or ["", ""]:
        table.add_column(name)
    for row in rows:
        table.add_row(*(fmt(v) for v in row))
    Console(soft_wrap=True).print(table)
