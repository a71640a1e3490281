"""``xsim report``: predicted vs measured for stored measurement records, with error summaries.

One path for every experiment: each (platform, experiment) with records becomes one report
(:mod:`xsim.report.micro`, :mod:`~xsim.report.moe`, :mod:`~xsim.report.fa_a2a`), one section of
the page and one entry of the JSON document. Which records: ``--records`` files (one platform:
``--platform``, else the shipped platform measured on the records' link and GPU count, else the
default), else the shipped ``calibration/records/P-*.jsonl`` of ``--platform P``, else of every
shipped platform that has records of the experiments asked for.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from xsim.commands.common import add_json_option, add_platform_options, platform_from_args, print_json, print_table
from xsim.report import EXPERIMENTS

MICRO_KEYS = ("drain_rate_gbps", "capacity_bytes", "t_iss0_us", "period_mape", "issue_mean_mape",
              "issue_p90_mape", "issue_max_mape", "ce_ratio", "n_points")
MOE_KEYS = ("n_configs", "geomean_speedup_measured", "geomean_speedup_predicted", "speedup_abs_err_max",
            "geomean_speedup_skewed_measured", "selector_geomean", "selector_worst", "gemm_vs_cublas_min",
            "gemm_batched_vs_cublas_min", "gemm_batched_vs_cublas_geomean", "kernel_time_mape",
            "kernel_time_mape_local")


def _positive_int(text: str) -> int:
    value = _nonnegative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def _nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def add_parser(sub):
    p = sub.add_parser("report", help="predicted vs measured for the stored records (HTML, PNG, JSON)")
    p.add_argument("--experiment", default="all", choices=EXPERIMENTS + ("all",), help="which experiment (default all)")
    p.add_argument("--records", nargs="+", metavar="FILE", help="record files (default: the shipped records)")
    p.add_argument("-o", "--output", metavar="report.html", help="write a self-contained HTML report (+ PNG per panel)")
    p.add_argument("--no-des", action="store_true", help="closed-form predictions only (skip the DES)")
    p.add_argument("--heldout", choices=("split", "all"), default="split",
                   help="micro: which records count as held out: the calibration's split (default), or all "
                        "of them (records the profile's fit never saw, e.g. the newk suite)")
    p.add_argument("--paper-des", action="store_true", help="moe: also simulate the paper's Table 2 rows (~1 min)")
    p.add_argument("--moe-compute", choices=("auto", "roofline", "contention"),
                   help="moe: the builder's compute model for every config (default: the scenario's)")
    p.add_argument("--moe-spread-seeds", type=_positive_int, default=None, metavar="N",
                   help="moe: kernel times averaged over N spread seeds (default 4)")
    p.add_argument("--moe-spread-seed", type=_nonnegative_int, default=0, metavar="S",
                   help="moe: the first spread seed (default 0)")
    p.add_argument("--moe-mainloop-pool", choices=("layer", "shape", "schedule"),
                   help="moe: which records give the mean mainloops (default: the scenario's)")
    from xsim.builders.fa_a2a import CC_FENCES

    p.add_argument("--cc-fence", choices=CC_FENCES, default=None,
                   help="fa-a2a: what the DES's cc fence waits for (default: the builder's, link; "
                        "docs/fa-a2a-report.md, \"What a system-scope fence waits for\")")
    p.add_argument("--clock-law", choices=("records", "none"), default="records",
                   help="fa-a2a: the DES's kernels clock by the power cap's law fitted on the duty records "
                        "(default; the records given, else the platform's shipped ones) or all at FA-only's clock; "
                        "moe: kernels timed back to back (steady) predicted at the cap by the MoE kernel's own law "
                        "(its duty records, given or shipped) or at one clock")
    p.add_argument("--moe-level", choices=("auto", "records", "predicted"), default="auto",
                   help="moe: each schedule's compute level from the layer's records, or predicted from the tile "
                        "streams (the shared-HBM pre-pass: compute = contention, inflight, 3.8 / 4.3 of the GPU's "
                        "roofline HBM; needs GEMM-only mainloop records); auto (default): predicted where those "
                        "records are at hand, else records")
    add_platform_options(p)
    add_json_option(p)
    return p


@dataclass
class Built:
    """One experiment's report on one platform: its JSON summary, headline keys, page section, table."""

    summary: dict
    keys: tuple[str, ...]
    section: object
    print_tables: Callable[[], None]
    notes: tuple[str, ...] = ()


def _micro(rs, platform, args) -> Built:
    from xsim.report import micro, micro_page

    rep = micro.build(rs, platform, des=not args.no_des, trace_tails=_trace_tails(platform),
                      holdout=args.heldout)

    def tables():
        s = rep.summary
        rows = [(h.quantity, h.value) for h in micro_page.headline(rep)]
        rows += [("mechanism, DES engine", f"{s['mechanism']}, {s['des_engine'] or 'off'}"),
                 ("points (held-out)", f"{s['n_points']} ({s['n_heldout']})")]
        print_table(f"micro: predicted vs measured on {s['platform']}", rows)
    return Built(rep.summary, MICRO_KEYS, micro_page.section(rep), tables)


def _moe(rs, platform, args) -> Built:
    from calibration.power import moe_clock_law_for
    from xsim.params import ParamError
    from xsim.report import moe, moe_page

    steady = any(r.params.get("timing") == "steady" for r in rs.select("moe", "kernel"))
    law, law_notes = moe_clock_law_for(rs, platform.name) if steady and args.clock_law == "records" else (None, [])
    try:
        rep = moe.build(rs, platform, des=not args.no_des, paper_des=args.paper_des and not args.no_des,
                        compute=args.moe_compute, spread_seeds=args.moe_spread_seeds,
                        spread_seed=args.moe_spread_seed, mainloop_pool=args.moe_mainloop_pool, level=args.moe_level,
                        clock_law=law)
    except ParamError as exc:
        hint = "; --moe-level records predicts from the kernels' own mainloops" if args.moe_level != "records" else ""
        raise ParamError(f"moe: {exc}{hint}") from exc

    def tables():
        rows = [[r.config, r.routing, r.measured["wave"]["kernel_us"], r.measured["interleaved"]["kernel_us"],
                 r.speedup_measured, r.speedup_predicted, r.predicted.get("selector", {}).get("schedule", "")]
                for r in rep.rows]
        print_table(f"moe: measured beside predicted on {rep.platform.name}", rows,
                    ["config", "routing", "wave us", "int us", "speedup", "predicted", "selector"])
        print_table("moe summary", [(h.quantity, h.value) for h in moe_page.headline(rep)])
    return Built(rep.summary, MOE_KEYS, moe_page.section(rep), tables, tuple(law_notes))


def _fa_a2a(rs, platform, args) -> Built:
    from xsim.report.fa_a2a_tables import print_report
    from xsim.report import fa_a2a, fa_a2a_page
    from xsim.simulate_point import default_engine

    from calibration.power import clock_law_for
    from xsim.report.fa_a2a_repeats import shipped_repeats

    repeats = None if args.records else shipped_repeats(platform.name)   # the shipped run's repeats
    law, law_notes = (None, []) if args.clock_law == "none" else clock_law_for(rs, platform.name)
    rep = fa_a2a.build(rs, platform, engine=None if args.no_des else default_engine(platform), cc_fence=args.cc_fence,
                       repeats=repeats, clock_law=law)
    return Built(rep.summary, fa_a2a.HEADLINE_KEYS, fa_a2a_page.section(rep), lambda: print_report(rep),
                 tuple(law_notes) + tuple(rep.notes))


BUILDERS = {"micro": _micro, "moe": _moe, "fa-a2a": _fa_a2a}


def _note(experiment: str, platform: str | None = None) -> str:
    where = f" for {platform}" if platform else ""
    return f"no {experiment} records exist{where} yet: nothing to compare (run xsim bench {experiment} first)"


def _platform_of(rs, platforms) -> str | None:
    """The shipped platform measured on the records' link, GPU count and GPU (``--records`` without
    ``--platform``; predicting host-link records with the NVLink profile would be silently
    wrong); None (the default platform) when no shipped platform was measured there."""
    from calibration.records import RecordError

    link, count, gpu = rs.platform.get("link"), rs.platform.get("gpu_count"), rs.platform.get("gpu")
    names = sorted(n for n, p in platforms.items()
                   if (m := p.provenance.get("measured_on", {})).get("link") == link and m.get("gpu_count") == count)
    # one link, several GPUs measured on it (one H200, one H100): the records' GPU, where one matches
    names = [n for n in names if platforms[n].provenance["measured_on"].get("gpu") == gpu] or names
    if len(names) > 1:
        raise RecordError(f"records measured on {link!r} x {count} GPUs match platforms {', '.join(names)}: "
                          f"give --platform")
    return names[0] if names else None


def _targets(args, wanted) -> list[tuple[object, object]]:
    """(platform, records) pairs to report on."""
    from calibration.records import RecordError, load_records, load_shipped_records, shipped_record_files
    from xsim.moe.catalog import HOST_PROFILE
    from xsim.platform import DEFAULT_PLATFORM, shipped_platforms

    if args.records:
        rs = load_records(args.records)
        name = args.platform if args.platform is not None else _platform_of(rs, shipped_platforms())
        return [(platform_from_args(args, name), rs)]
    if args.platform is not None:
        platform = platform_from_args(args)
        rs = load_shipped_records(platform=platform.name)
        if rs is None:
            raise RecordError(f"no records shipped for platform {platform.name!r} in calibration/records/")
        return [(platform, rs)]
    shipped = [p for p in shipped_platforms() if shipped_record_files(p)]
    found = [(p, rs) for p in sorted(shipped, key=lambda p: (p != DEFAULT_PLATFORM, p))
             if (rs := load_shipped_records(platform=p)) is not None and set(wanted) & set(rs.experiments)]
    if not found:
        raise RecordError(_note(wanted[0]) if len(wanted) == 1 else "no records shipped in calibration/records/")
    if len(wanted) == 1:   # one experiment: the default platform if it has it, else the only one that has it,
        # else the one the shipped one-GPU scenarios are written for (the H200's host link, not the H100's)
        if len(found) > 1 and found[0][0] != DEFAULT_PLATFORM:
            home = [f for f in found if f[0] == HOST_PROFILE]
            if not home:
                names = ", ".join(p for p, _ in found)
                raise RecordError(f"{wanted[0]} records ship for {names}: give --platform")
            found = home
        found = found[:1]
    return [(platform_from_args(args, p), rs) for p, rs in found]


def _title(rs_list, wanted, platforms) -> str:
    """Experiments, platforms, links and the records' dates: what the page is about, in one line."""
    from xsim.report.micro_page import dates_text

    times = sorted(str(r.data["time_utc"]) for rs in rs_list for r in rs.records if r.data.get("time_utc"))
    when = f", records {dates_text(times[0], times[-1])}" if times else ""
    where = "; ".join(f"{p.name}" + (f" ({rs.platform.get('link')})" if rs.platform.get("link") else "")
                      for p, rs in zip(platforms, rs_list))
    return f"X-Stage {', '.join(wanted)}: predicted vs measured on {where}{when}"


def _prefixed(section, prefix: str):
    """The section with its figures' file names prefixed (several platforms share one page)."""
    from dataclasses import replace

    return replace(section, figures=[replace(f, name=f"{prefix}-{f.name}") for f in section.figures])


def _write_html(title: str, sections: list, output: Path) -> tuple[list[str], str | None]:
    """One offline page, a section per (platform, experiment), and a PNG per figure."""
    from xsim.report import html
    from xsim.report.page import Page

    page = Page(title, sections)
    page.write(output)
    return html.write_pngs(page.figures, output.parent, output.stem)


def _trace_tails(platform):
    """Measured max-over-CTA issue of the platform's shipped traces (for records without it)."""
    from calibration.records import shipped_traces_dir
    from calibration.tails import load_trace_tails

    return load_trace_tails(shipped_traces_dir(platform.name))


def run(args) -> int:
    from calibration.records import RecordError
    from xsim.report.page import Section

    from xsim.fileio import check_output

    if args.output:
        check_output(args.output, "report")  # before the work: a missing folder is made, a bad path said
    wanted = EXPERIMENTS if args.experiment == "all" else (args.experiment,)
    targets = _targets(args, wanted)
    docs, notes, sections = {}, [], []
    for platform, rs in targets:
        doc = docs.setdefault(platform.name, {"platform": platform.name, "experiments": {}})
        for experiment in wanted:
            if experiment not in rs.experiments:
                note = _note(experiment, platform.name)
                if len(wanted) == 1:
                    raise RecordError(note)
                doc["experiments"][experiment] = {"note": note}
                notes.append(note)
                sections.append(Section(title=f"{experiment} on {platform.name}", notes=[note]))
                continue
            built = BUILDERS[experiment](rs, platform, args)
            doc["experiments"][experiment] = built.summary
            doc.update({k: built.summary.get(k) for k in built.keys})
            notes += built.notes
            sections.append(_prefixed(built.section, platform.name) if len(targets) > 1 else built.section)
            if not args.json:
                built.print_tables()
    document = next(iter(docs.values())) if len(docs) == 1 else {"platforms": docs}
    if args.output:
        title = _title([rs for _, rs in targets], wanted, [p for p, _ in targets])
        pngs, skipped = _write_html(title, sections, Path(args.output))
        document["html"], document["png"] = args.output, pngs
        notes += [skipped] if skipped else []
    document["notes"] = notes
    if args.json:
        print_json(document)
        return 0
    for note in notes:
        print(f"note: {note}")
    if args.output:
        print(f"wrote {args.output}" + (f" and {len(document.get('png', []))} PNG" if document.get("png") else ""))
    return 0
