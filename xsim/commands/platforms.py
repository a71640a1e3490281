"""``xsim platforms``: the shipped platform profiles."""

from __future__ import annotations

from xsim.commands.common import add_json_option, print_json, print_table
from xsim.platform import DEFAULT_PLATFORM, shipped_platforms
from xsim.units import KIB, format_bytes, format_gbps, format_us


def add_parser(sub):
    p = sub.add_parser("platforms", help="list shipped platform profiles")
    add_json_option(p)
    return p


def run(args) -> int:
    platforms = shipped_platforms()
    if args.json:
        print_json({"default": DEFAULT_PLATFORM, "platforms": {n: p.to_dict() for n, p in platforms.items()}})
        return 0
    rows = []
    for name, p in platforms.items():
        k = p.sms
        rows.append([name + (" (default)" if name == DEFAULT_PLATFORM else ""), p.status, p.gpus, k,
                     format_gbps(p.drain_rate_gbps), format_us(p.t_iss0_us(k, 32 * KIB)),
                     format_bytes(p.capacity_bytes(k))])
    print_table("shipped platforms", rows, ["name", "status", "GPUs", "SMs K", "R", "T_iss0(K, 32 KiB)", "Q(K)"])
    return 0
