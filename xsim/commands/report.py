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


def _write_html(title: str, sections: list, output: Path) -> tuple[list[str], str | None]:
    """One offline page, a section per experiment (plotly.js inlined once), and a PNG per figure."""
    from xsim.report import html
    from xsim.report.page import Page

    page = Page(title, sections)
    page.write(output)
    return html.write_pngs(page.figures, output.parent, output.stem)


def _page_title(rs, experiments, platform_name: str) -> str:
    """Experiments, platform, link and the records' dates: what the page is about, in one line."""
    from xsim.report.micro_page import dates_text

    times = sorted(str(r.data["time_utc"]) for r in rs.records if r.data.get("time_utc"))
    when = f", records {dates_text(times[0], times[-1])}" if times else ""
    link = (rs.platform or {}).get("link")
    return f"X-Stage {', '.join(experiments)}: predicted vs measured on {platform_name}" + \
        (f" ({link})" if link else "") + when


def _trace_tails(platform):
    """Measured max-over-CTA issue of the platform's shipped traces (for records without it)."""
    from calibration.records import shipped_traces_dir
    from calibration.tails import load_trace_tails

    return load_trace_tails(shipped_traces_dir(platform.name))


def _table(rep) -> None:
    from xsim.report.micro_page import headline

    rows = [(h.quantity, h.value) for h in headline(rep)]
    s = rep.summary
    rows += [("mechanism, DES engine", f"{s['mechanism']}, {s['des_engine'] or 'off'}"),
             ("points (held-out)", f"{s['n_points']} ({s['n_heldout']})")]
    print_table(f"micro: predicted vs measured on {s['platform']}", rows)


def run(args) -> int:
    from calibration.records import RecordError

    if args.experiment == "fa-a2a":
        from xsim.commands import report_fa_a2a

        return report_fa_a2a.run(args)
    platform = platform_from_args(args)
    rs = _records(args, platform)
    wanted = EXPERIMENTS if args.experiment == "all" else (args.experiment,)
    present = set(rs.experiments)
    if args.experiment != "all" and args.experiment not in present:
        raise RecordError(_note(args.experiment))
    from xsim.report.page import Section

    document: dict = {"experiments": {}}
    notes, sections = [], []
    for experiment in wanted:
        if experiment not in present or experiment != "micro":
            note = _note(experiment) if experiment not in present else f"no report for {experiment} yet"
            document["experiments"][experiment] = {"note": note}
            notes.append(note)
            sections.append(Section(title=experiment, notes=[note]))
            continue
        from xsim.report import micro, micro_page

        rep = micro.build(rs, platform, des=not args.no_des, trace_tails=_trace_tails(platform))
        document["experiments"]["micro"] = rep.summary
        document.update({k: rep.summary[k] for k in HEADLINE_KEYS})
        if args.output:
            sections.append(micro_page.section(rep))
        if not args.json:
            _table(rep)
    if args.output:
        title = _page_title(rs, wanted, platform.name)
        pngs, skipped = _write_html(title, sections, Path(args.output))
        document["html"], document["png"] = args.output, pngs
        if skipped:
            notes.append(skipped)
    document["notes"] = notes
    if args.json:
        print_json(document)
    else:
        for note in notes:
            print(f"note: {note}")
        if args.output:
            print(f"wrote {args.output}" + (f" and {len(document.get('png', []))} PNG" if document.get("png") else ""))
    return 0
