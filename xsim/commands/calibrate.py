"""``xsim calibrate``: fit a platform profile (R, T_iss0(K, B), Q(K)) from measurement records."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from xsim.commands.common import add_json_option, print_json, print_table
from xsim.fileio import check_output
from xsim.platform import save_profile
from xsim.units import format_bytes, format_percent, format_us, human_key


def add_parser(sub):
    p = sub.add_parser("calibrate", help="fit a platform profile from micro records (JSONL)")
    p.add_argument("records", nargs="+", metavar="RECORDS.jsonl", help="measurement record files")
    p.add_argument("-o", "--output", required=True, metavar="PROFILE.json", help="profile file to write")
    p.add_argument("--name", default=None, help="profile name (default: the output file's stem)")
    p.add_argument("--mechanism", default=None, help="store mechanism to fit (default st.v4 if present)")
    p.add_argument("--statistic", default="mean", choices=("mean", "median"), help="statistic fitted (default mean)")
    p.add_argument("--traces", metavar="DIR", default=None,
                   help="per-burst traces for the arbitration weights (default: NAME-traces/ beside the first records file)")
    p.add_argument("--fair", action="store_true", help="no arbitration weights (every producer served equally)")
    p.add_argument("--weights-by", choices=("sm", "rank"), default="sm",
                   help="index the arbitration weights by the SM a CTA runs on (default) or by CTA rank")
    p.add_argument("--capacity-spread", choices=("off", "trace", "set"), default="off",
                   help="also fit a per-burst capacity share of aligned bursts (calibration/spread.py): on the "
                        "weight trace with e refitted (trace), or on every isolated aligned trace of its K with e "
                        "held (set); off (default) fits none")
    p.add_argument("--drain-law", choices=("off", "k", "after"), default="after",
                   help="R(K) = R K/(K + K0), taken if it cuts the one-R residual by 20 %%: after (default, the "
                        "shipped profiles): fitted on the one-R stages' drain-limited points once they have "
                        "converged, used by the DES and the closed forms, fed back into no stage; k: fed back "
                        "into every stage; off: one R for every K")
    p.add_argument("--loadgate", metavar="RECORDS.jsonl", default=None,
                   help="loadgate records for the load gate (default: NAME-loadgate.jsonl beside the first records file)")
    p.add_argument("--no-loadgate", action="store_true", help="fit no load gate (the profile has none)")
    p.add_argument("--no-des", action="store_true",
                   help="do not fit the per-burst spread nor record the DES's held-out errors (closed forms only)")
    add_json_option(p)
    return p


def _rows(profile) -> list[tuple[str, object]]:
    pv = profile.provenance
    fit = pv["fit"]
    rows = [("records", f'{pv["records"]["n_records"]} ({pv["records"]["n_skipped_failed_check"]} skipped: check failed)'),
            ("records sha256", pv["records"]["sha256"][:16] + "..."),
            ("mechanism", f'{fit["mechanism"]}, {fit["threads_per_producer"]} threads, {fit["statistic"]}')]
    for stage in ("drain_rate", "t_iss0", "burst_overhead", "grid_barrier"):
        for name, v in fit[stage]["parameters"].items():
            lo, hi = v["ci95"]
            rows.append((name, f'{human_key(name, v["value"])}  [{human_key(name, lo)}, {human_key(name, hi)}]'))
    for k, knee in fit["capacity_knees"].items():
        lo, hi = knee["ci95_bytes"]
        rows.append((f"Q(K={k}) knee", f'{format_bytes(knee["capacity_bytes"])}  [{format_bytes(lo)}, {format_bytes(hi)}]'))
    head = pv["headline"]
    arb = pv.get("arbitration")
    rows.append(("arbitration weights", f'{arb["n_producers"]} from {arb["trace"]}' if arb else "none (fair)"))
    gate = pv.get("load_gate")
    if gate:
        held = gate["errors_percent"].get("heldout-all", {})
        rows.append(("load gate", f'{gate["chosen"]["scope"]} <= {format_bytes(gate["chosen"]["threshold_bytes"])}, '
                                  f'held-out median MAPE {format_percent(held.get("median_mape"))} (n={held.get("n", 0)})'))
    rows += [("T_iss0(132, 32 KiB)", format_us(head["t_iss0_us_at_k132_b32kib"])),
             ("Q(132)", format_bytes(head["capacity_bytes_at_k132"])), ("ce_ratio", head["ce_ratio"])]
    for model, errors in pv["heldout"]["errors_percent"].items():
        for mode in ("aligned", "free_running"):
            e = errors[mode]
            rows.append((f"held-out {model} {mode}", f'period MAPE {format_percent(e["period_mape"])}, '
                                                    f'mean issue MAPE {format_percent(e["issue_mean_mape"])}, '
                                                    f'p90 {format_percent(e.get("issue_p90_mape"))}, '
                                                    f'max {format_percent(e.get("issue_max_mape"))} '
                                                    f'(n={e.get("n_max_points", 0)})'))
    return rows


def _beside_records(args, given: str | None, suffix: str) -> Path:
    """The path given on the command line, else ``<name><suffix>`` beside the first record file
    (name: the profile's, or the output file's stem)."""
    name = args.name or Path(args.output).stem
    return Path(given) if given else Path(args.records[0]).parent / f"{name}{suffix}"


def _traces(args) -> Path | None:
    from calibration.records import RecordError

    folder = _beside_records(args, args.traces, "-traces")
    if not folder.is_dir():
        if args.traces:
            raise RecordError(f"traces folder {args.traces} does not exist")
        return None
    return folder


def _weights(args, mechanism: str, folder: Path | None):
    """Arbitration weights from the backpressured isolated trace, when one is there, and its path."""
    from calibration.arbitration import choose_trace, weights_from_trace

    if args.fair or folder is None:
        return None, None
    trace = choose_trace(folder, mechanism)
    return (weights_from_trace(trace), trace) if trace is not None else (None, None)


def _loadgate_records(args, micro):
    """The loadgate RecordSet to fit the gate from (checked to be the micro records' platform), or None."""
    from calibration.loadgate import check_same_platform
    from calibration.records import RecordError, load_records

    if args.no_loadgate or args.no_des:
        return None
    path = _beside_records(args, args.loadgate, "-loadgate.jsonl")
    if not path.is_file():
        if args.loadgate:
            raise RecordError(f"loadgate records {args.loadgate} do not exist")
        return None
    rs = load_records([path])
    check_same_platform(micro, rs)
    return rs


def _with_gate(profile, gate_rs):
    from calibration.loadgate import fit_gate, with_fitted_gate
    from xsim.simulate_point import default_engine

    return with_fitted_gate(profile, fit_gate(gate_rs, profile, default_engine(profile)), gate_rs)


def run(args) -> int:
    from calibration.fit import fit_records
    from calibration.profile import build_profile
    from calibration.records import RecordError, load_records
    from calibration.stages import FitError
    from calibration.tails import load_trace_tails

    rs = load_records(args.records)
    check_output(args.output, "profile")  # before the fit: `-o RECORDS` must not cost the measurements
    gate_rs = _loadgate_records(args, rs)
    try:
        fit = fit_records(rs, args.mechanism, args.statistic, drain_law=args.drain_law)
    except FitError as exc:
        raise RecordError(f"cannot fit {', '.join(Path(r).name for r in args.records)}: {exc}") from None
    name = args.name or Path(args.output).stem
    folder = _traces(args)
    weights, trace = _weights(args, fit.mechanism, folder)
    tails = load_trace_tails(folder)
    spread = des_errors = None
    if not args.no_des:
        from calibration.profile import base_platform
        from calibration.spread import fit_spread
        from xsim.report.micro import heldout_errors

        if trace is not None:
            base = dataclasses.replace(base_platform(fit, rs, name), producer_weights=weights.weights)
            spread = fit_spread(base, trace, folder, fit.mechanism, by_sm=args.weights_by == "sm",
                                capacity=args.capacity_spread)
        first = build_profile(fit, rs, name, weights=weights, spread=spread)
        des_errors = heldout_errors(rs, first, tails)
    profile = build_profile(fit, rs, name, weights=weights, spread=spread, des_errors=des_errors)
    if gate_rs is not None:
        profile = _with_gate(profile, gate_rs)
    save_profile(profile, args.output)
    if args.json:
        print_json(profile.to_dict())
    else:
        print_table(f"calibrated {profile.name} -> {args.output}", _rows(profile))
    return 0
