"""``xsim platforms``: the shipped platform profiles."""

from __future__ import annotations

from xsim.commands.common import add_json_option, print_json, print_table
from xsim.platform import DEFAULT_PLATFORM, shipped_platforms
from xsim.units import KIB, MIB


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
                     p.drain_rate_gbps, p.t_iss0_us(k, 32 * KIB), p.capacity_bytes(k) / MIB])
    print_table("shipped platforms", rows,
                ["name", "status", "GPUs", "SMs K", "R GB/s", "T_iss0(K, 32KB) us", "Q(K) MiB"])
    return 0
