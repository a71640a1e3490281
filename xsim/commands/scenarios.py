"""``xsim scenarios``: the shipped scenarios and their parameters."""

from __future__ import annotations

from xsim.commands.common import add_json_option, print_json, print_table
from xsim.scenario import shipped_scenarios


def add_parser(sub):
    p = sub.add_parser("scenarios", help="list shipped scenarios")
    add_json_option(p)
    return p


def run(args) -> int:
    scenarios = shipped_scenarios()
    if args.json:
        print_json({name: {"builder": s.builder, "description": s.description, "params": dict(s.params),
                           "sources": dict(s.sources)} for name, s in scenarios.items()})
        return 0
    rows = [[name, s.builder, s.description] for name, s in scenarios.items()]
    print_table("shipped scenarios", rows, ["name", "builder", "description"])
    return 0
