"""``xsim report``: predicted vs measured for stored measurement records, with error summaries."""

from __future__ import annotations

from pathlib import Path

from xsim.commands.common import add_json_option, add_platform_options, platform_from_args, print_json, print_table
from xsim.report import EXPERIMENTS

HEADLINE_KEYS = ("drain_rate_gbps", "capacity_bytes", "t_iss0_us", "period_mape", "issue_mean_mape",
                 "issue_p90_mape", "issue_max_mape", "ce_ratio", "n_points")


def add_parser(sub):
    p = sub.add_parser("report", help="predicted vs measured for the stored records (HTML, PNG, JSON)")
    p.add_argument("--experiment", default="all", choices=EXPERIMENTS + ("all",), help="which experiment (default all)")
    p.add_argument("--records", nargs="+", metavar="FILE", help="record files (default: the shipped records)")
    p.add_argument("-o", "--output", metavar="report.html", help="write a self-contained HTML report (+ PNG per panel)")
    p.add_argument("--no-des", action="store_true", help="closed-form predictions only (skip the DES)")
    add_platform_options(p)
    add_json_option(p)
    return p


def _records(args, platform):
    """The records given, or the shipped records of the platform reported on."""
    from calibration.records import RecordError, load_records, load_shipped_records

    rs = load_records(args.records) if args.records else load_shipped_records(platform=platform.name)
    if rs is None:
        raise RecordError(f"no records given and none shipped for platform {platform.name!r} in calibration/records/")
    return rs


def _note(experiment: str) -> str:
    return f"no {experiment} records exist yet: nothing to compare (run xsim bench {experiment} first)"


def _micro_html(rep, output: Path) -> tuple[list[str], str | None]:
    from xsim.report import html, micro_traces
    from xsim.report.micro_figures import figures

    figs = figures(rep)
    figs.update(micro_traces.figures(rep.platform))
    s = rep.summary
    rows = [[r.kind, r.producers, r.burst_bytes // 1024, r.gap_us, "al" if r.aligned else "fr",
             "held-out" if r.heldout else "train", r.measured["issue_mean"], r.measured["issue_median"],
             r.measured["issue_p90"], r.predicted["mode-aware"]["issue_us"],
             r.predicted.get("des", {}).get("issue_us", float("nan")), r.measured["period_mean"],
             r.predicted["mode-aware"].get("period_us", float("nan")),
             r.predicted.get("des", {}).get("period_us", float("nan"))] for r in rep.rows]
    header = ["kind", "K", "B KiB", "G us", "mode", "split", "issue mean", "median", "p90", "pred (mode-aware)",
              "pred (DES)", "period mean", "pred (mode-aware)", "pred (DES)"]
    sections = [("summary (errors in percent, held-out points)", html.json_block(s)),
                ("platform", html.json_block({k: v for k, v in rep.platform.to_dict().items() if k != "provenance"})),
                ("every point", html.table(header, rows))]
    output.write_text(html.page(f"X-Stage micro: predicted vs measured on {rep.platform.name}", sections, figs))
    return html.write_pngs(figs, output.parent, output.stem)


def _trace_tails(platform):
    """Measured max-over-CTA issue of the platform's shipped traces (for records without it)."""
    from calibration.records import shipped_traces_dir
    from calibration.tails import load_trace_tails

    return load_trace_tails(shipped_traces_dir(platform.name))


def _table(summary: dict) -> None:
    rows = [(k, summary.get(k)) for k in HEADLINE_KEYS + ("headline_model", "mechanism", "des_engine")]
    for model, errors in summary["heldout_errors_percent"].items():
        for mode in ("aligned", "free_running"):
            e = errors[mode]
            rows.append((f"held-out {model} {mode}",
                         f'period {e["period_mape"]:.3g}%, mean issue {e["issue_mean_mape"]:.3g}%, p90 issue '
                         f'{e["issue_p90_mape"]:.3g}% (n={e["n_points"]}), max issue {e["issue_max_mape"]:.3g}% '
                         f'(n={e["n_max_points"]})'))
    print_table(f"micro: predicted vs measured on {summary['platform']}", rows)


def run(args) -> int:
    from calibration.records import RecordError

    platform = platform_from_args(args)
    rs = _records(args, platform)
    wanted = EXPERIMENTS if args.experiment == "all" else (args.experiment,)
    present = set(rs.experiments)
    if args.experiment != "all" and args.experiment not in present:
        raise RecordError(_note(args.experiment))
    document: dict = {"experiments": {}}
    notes = []
    for experiment in wanted:
        if experiment not in present or experiment != "micro":
            note = _note(experiment) if experiment not in present else f"no report for {experiment} yet"
            document["experiments"][experiment] = {"note": note}
            notes.append(note)
            continue
        from xsim.report import micro

        rep = micro.build(rs, platform, des=not args.no_des, trace_tails=_trace_tails(platform))
        document["experiments"]["micro"] = rep.summary
        document.update({k: rep.summary[k] for k in HEADLINE_KEYS})
        if args.output:
            pngs, skipped = _micro_html(rep, Path(args.output))
            document["html"], document["png"] = args.output, pngs
            if skipped:
                notes.append(skipped)
        if not args.json:
            _table(rep.summary)
    document["notes"] = notes
    if args.json:
        print_json(document)
    else:
        for note in notes:
            print(f"note: {note}")
        if args.output:
            print(f"wrote {args.output}" + (f" and {len(document.get('png', []))} PNG" if document.get("png") else ""))
    return 0
