"""``xsim report --experiment fa-a2a``: Table 3 and Fig. 11 for our hardware, targets pass/fail.

Records: ``--records`` files, else the shipped ``calibration/records/P-fa-a2a*.jsonl`` of one
platform P (``--platform P``, or the only P that has them). Platform: ``--platform``, else the
shipped profile the records file is named after (``P-fa-a2a.jsonl`` -> ``P``).
"""

from __future__ import annotations

from pathlib import Path

from xsim.commands.common import platform_from_args, print_json, print_table

TAG = "-fa-a2a"


def _platform_of(file_name: str) -> str:
    """``P-fa-a2a[-...].jsonl`` -> ``P`` (the shipped records' naming)."""
    return file_name.split(TAG)[0]


def _records(args):
    from calibration.records import RecordError, load_records, parse_texts, shipped_record_files

    if args.records:
        rs = load_records(args.records)
        names = [Path(p).name for p in args.records]
    else:
        files = [e for e in shipped_record_files() if e.name.endswith(".jsonl") and TAG in e.name]
        platforms = sorted({_platform_of(e.name) for e in files})
        if args.platform in platforms:
            files = [e for e in files if _platform_of(e.name) == args.platform]
        elif len(platforms) > 1:
            raise RecordError(f"fa-a2a records ship for {', '.join(platforms)}: give --platform or --records")
        if not files:
            raise RecordError("no fa-a2a records exist yet: nothing to compare (run xsim bench fa-a2a first)")
        rs = parse_texts([(e.name, e.read_bytes()) for e in files])
        names = [e.name for e in files]
    if "fa-a2a" not in rs.experiments:
        raise RecordError("no fa-a2a records exist yet: nothing to compare (run xsim bench fa-a2a first)")
    return rs, names


def _platform(args, names):
    if args.platform is None:
        from xsim.platform import shipped_platforms

        named = [_platform_of(n) for n in names if TAG in n and _platform_of(n) in shipped_platforms()]
        if named:
            args.platform = named[0]
    return platform_from_args(args)


def _wide_table(title: str, rows: list[list], header: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    from xsim.commands.common import fmt

    table = Table(title=title)
    for name in header:
        table.add_column(name, no_wrap=True)
    for row in rows:
        table.add_row(*(fmt(v) for v in row))
    console = Console()
    Console(width=max(console.width, 150)).print(table)


def _print(rep) -> None:
    from xsim.report.fa_a2a import HEADLINE_KEYS, PREDICTION_HEADER, TABLE3_HEADER, prediction_rows, table3_rows

    for s in rep.series:
        where = "on {}: d={head_dim} b_m={block_m} b_n={block_n} N={sp} {destination}".format(
            rep.platform.name, **s.key)
        _wide_table(f"Table 3 {where} (us, medians)", table3_rows(s), TABLE3_HEADER)
        _wide_table(f"measured vs predicted {where} (us)", prediction_rows(s), PREDICTION_HEADER)
    s = rep.summary
    print_table("fa-a2a headline", [(k, s.get(k)) for k in HEADLINE_KEYS + ("headline_model",)])
    if "targets" in s:
        _wide_table("targets", [[t["target"], t["value"], t["bound"],
                                 {True: "PASS", False: "FAIL", None: "n/a"}[t["pass"]]] for t in s["targets"]],
                    ["target", "value", "bound", "result"])


def run(args) -> int:
    from xsim.report import fa_a2a
    from xsim.report.des_runs import default_engine

    rs, names = _records(args)
    platform = _platform(args, names)
    engine = None if args.no_des else default_engine(platform)
    rep = fa_a2a.build(rs, platform, engine=engine)
    document = {**{k: rep.summary.get(k) for k in fa_a2a.HEADLINE_KEYS},
                "experiments": {"fa-a2a": rep.summary}, "notes": list(rep.notes)}
    if args.output:
        from xsim.report.fa_a2a_figures import write_html

        pngs, skipped = write_html(rep, Path(args.output))
        document["html"], document["png"] = args.output, pngs
        if skipped:
            document["notes"].append(skipped)
    if args.json:
        print_json(document)
        return 0
    _print(rep)
    for note in document["notes"]:
        print(f"note: {note}")
    if args.output:
        print(f"wrote {args.output}" + (f" and {len(document['png'])} PNG" if document.get("png") else ""))
    return 0
