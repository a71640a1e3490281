"""``xsim model``: the closed-form Burst–Gap answer for one (V, G) on a platform."""

from __future__ import annotations

from xsim.closedform import design_test, isolated_burst, steady_state
from xsim.commands.common import unit_arg, add_json_option, add_platform_options, platform_from_args, print_json, print_table
from xsim.params import ParamError
from xsim.units import drain_time_us, human_key, parse_bytes, parse_time_us


def add_parser(sub):
    p = sub.add_parser("model", help="closed-form Burst–Gap model (eqs. 3–10)")
    p.add_argument("--volume-bytes", required=True, type=unit_arg(parse_bytes), metavar="V", help="aggregate burst volume V = K B")
    p.add_argument("--gap-us", required=True, type=unit_arg(parse_time_us), metavar="G", help="producer-side gap G")
    p.add_argument("--producers", type=int, metavar="K",
                   help="concurrent producers K (for T_iss0(K, B) and Q(K); default: the platform's SM count)")
    p.add_argument("--peers", type=int, default=1, help="destination GPUs the burst is spread over (default 1)")
    add_platform_options(p)
    add_json_option(p)
    return p


def evaluate(platform, volume_bytes: float, gap_us: float, producers: int, peers: int = 1) -> dict:
    if not volume_bytes > 0:
        raise ParamError(f"--volume-bytes must be > 0, got {volume_bytes:g}")
    if gap_us < 0:
        raise ParamError(f"--gap-us must be >= 0, got {gap_us:g}")
    if producers < 1 or peers < 1:
        raise ParamError("--producers and --peers must be >= 1")
    burst_bytes = volume_bytes / producers
    t0 = platform.t_iss0_us(producers, burst_bytes)
    r = platform.effective_drain_rate_gbps(peers)
    q = platform.capacity_bytes(producers)
    ss = steady_state(volume_bytes, gap_us, t0, r, q)
    iso = isolated_burst(volume_bytes, t0, r, q)
    test = design_test(volume_bytes, gap_us, t0, r, q)
    return {
        "t_issue_us": ss.t_issue_us,
        "t_period_us": ss.t_period_us,
        "delta_t_issue_us": ss.delta_t_issue_us,
        "g_star_us": ss.g_star_us,
        "q_peak_bytes": iso.q_peak_bytes,
        "t_issue_isolated_us": iso.t_issue_isolated_us,
        "rate_bound_ok": test.rate_bound_ok,
        "capacity_bound_ok": test.capacity_bound_ok,
        "t_period_cc_us": ss.t_period_cc_us,
        "drain_time_us": drain_time_us(volume_bytes, r),
        "inputs": {"platform": platform.name, "volume_bytes": volume_bytes, "gap_us": gap_us,
                   "producers": producers, "burst_bytes": burst_bytes, "peers": peers,
                   "t_iss0_us": t0, "drain_rate_gbps": r, "capacity_bytes": q},
    }


def run(args) -> int:
    platform = platform_from_args(args)
    out = evaluate(platform, args.volume_bytes, args.gap_us, args.producers or platform.sms, args.peers)
    if args.json:
        print_json(out)
        return 0
    rows = [(k, human_key(k, v)) for k, v in list(out["inputs"].items()) + list(out.items()) if k != "inputs"]
    print_table(f"Burst–Gap model on {platform.name}", rows)
    return 0
