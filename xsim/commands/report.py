"""``xsim report``: predicted vs measured for stored measurement records, with error summaries."""

from __future__ import annotations

from pathlib import Path

from xsim.commands.common import add_json_option, add_platform_options, platform_from_args, print_json, print_table
from xsim.report import EXPERIMENTS

HEADLINE_KEYS = ("drain_rate_gbps", "capacity_bytes", "t_iss0_us", "period_mape", "issue_mean_mape", "ce_ratio",
                 "n_points")


def add_parser(sub):
    p = sub.add_parser("report", help="predicted vs measured for the stored records (HTML, PNG, JSON)")
    p.add_argument("--experiment", default="all", choices=EXPERIMENTS + ("all",), help="which experiment (default all)")
    p.add_argument("--records", nargs="+", metavar="FILE", help="record files (default: the shipped records)")
    p.add_argument("-o", "--output", metavar="report.html", help="write a self-contained HTML report (+ PNG per panel)")
    p.add_argument("--no-des", action="store_true", help="closed-form predictions only (skip the DES)")
    p.add_argument("--paper-des", action="store_true", help="moe: also simulate the paper's Table 2 rows (~1 min)")
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


def _table(rep) -> None:
    from xsim.report.micro_page import headline

    rows = [(h.quantity, h.value) for h in headline(rep)]
    s = rep.summary
    rows += [("mechanism, DES engine", f"{s['mechanism']}, {s['des_engine'] or 'off'}"),
             ("points (held-out)", f"{s['n_points']} ({s['n_heldout']})")]
    print_table(f"micro: predicted vs measured on {s['platform']}", rows)


MOE_KEYS = ("n_configs", "geomean_speedup_measured", "geomean_speedup_predicted", "speedup_abs_err_max",
            "geomean_speedup_skewed_measured", "selector_geomean", "selector_worst", "gemm_vs_cublas_min")


def _moe_records(args):
    """The moe records: from --records, else the shipped ``*-moe.jsonl`` files; None if there are none."""
    from calibration.records import load_records, parse_texts, shipped_record_files

    if args.records:
        rs = load_records(args.records)
    else:
        texts = [(e.name, e.read_bytes()) for e in shipped_record_files() if e.name.endswith("-moe.jsonl")]
        rs = parse_texts(texts) if texts else None
    return rs if rs is not None and "moe" in rs.experiments else None


def _moe(args, document: dict, notes: list):
    """The moe report into ``document``; its page section (a note section without records)."""
    from xsim.moe.catalog import host_platform
    from xsim.report import moe, moe_page
    from xsim.report.page import Section

    rs = _moe_records(args)
    if rs is None:
        note = _note("moe")
        document["experiments"]["moe"] = {"note": note}
        notes.append(note)
        return Section(title="moe", notes=[note])
    overridden = args.platform or any(getattr(args, k) is not None for k in ("t_iss0_us", "drain_gbps", "capacity_bytes"))
    rep = moe.build(rs, platform_from_args(args) if overridden else host_platform(), des=not args.no_des,
                    paper_des=args.paper_des and not args.no_des)
    document["experiments"]["moe"] = rep.summary
    document.update({k: rep.summary[k] for k in MOE_KEYS})
    if not args.json:
        rows = [[r.config, r.routing, r.measured["wave"]["kernel_us"], r.measured["interleaved"]["kernel_us"],
                 r.speedup_measured, r.speedup_predicted, r.predicted.get("selector", {}).get("schedule", "")]
                for r in rep.rows]
        print_table(f"moe: measured beside predicted on {rep.platform.name}", rows,
                    ["config", "routing", "wave us", "int us", "speedup", "predicted", "selector"])
        print_table("moe summary", [(h.quantity, h.value) for h in moe_page.headline(rep)])
    return moe_page.section(rep)


def run(args) -> int:
    from calibration.records import RecordError

    from xsim.fileio import check_output

    if args.output:
        check_output(args.output, "report")  # before the work: a missing folder is made, a bad path said
    if args.experiment == "fa-a2a":
        from xsim.commands import report_fa_a2a

        return report_fa_a2a.run(args)
    if args.experiment == "moe":
        doc: dict = {"experiments": {}}
        moe_notes: list = []
        moe_section = _moe(args, doc, moe_notes)
        if "note" in doc["experiments"]["moe"]:
            raise RecordError(moe_notes[0])
        if args.output:
            pngs, skipped = _write_html(moe_section.title, [moe_section], Path(args.output))
            doc["html"], doc["png"] = args.output, pngs
            moe_notes += [skipped] if skipped else []
        doc["notes"] = moe_notes
        if args.json:
            print_json(doc)
        elif args.output:
            print(f"wrote {args.output}" + (f" and {len(doc['png'])} PNG" if doc.get("png") else ""))
        return 0
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
        if experiment == "moe":
            sections.append(_moe(args, document, notes))
            continue
        if experiment not in present or experiment != "micro":
            note = _note(experiment) if experiment not in present else f"no report for {experiment} yet"
            document["experiments"][experiment] = {"note": note}
            notes.append(note)
            sections.append(Section(title=experiment, notes=[note]))
            continue
        from xsim.report import micro, micro_page

        rep = micro.build(rs, platform, des=not args.no_des)
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
