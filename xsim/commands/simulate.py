"""``xsim simulate``: run a scenario through the DES and summarize it."""

from __future__ import annotations

import json
from pathlib import Path

from xsim.fileio import atomic_path, atomic_write, ensure_folder

from xsim.commands.common import add_json_option, add_platform_options, platform_from_args, print_json, print_table
from xsim.des import ENGINES
from xsim.scenario import load_scenario


def add_parser(sub):
    p = sub.add_parser("simulate", help="discrete-event simulation of a scenario")
    p.add_argument("scenario", help="shipped scenario name or TOML file")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario parameter")
    p.add_argument("--engine", choices=ENGINES, default="fast",
                   help="fast (numba, default) or simpy (the readable reference; same results)")
    p.add_argument("--out", type=Path, metavar="DIR", help="write index.html (summary and plots, offline), tiles.csv, qtrace.csv, summary.json")
    add_platform_options(p)
    add_json_option(p)
    return p


def run(args) -> int:
    scenario = load_scenario(args.scenario).with_overrides(args.set)
    platform = platform_from_args(args, None if args.platform else scenario.platform or None)
    outputs = args.out is not None
    scenario.estimate(platform, args.engine, outputs, outputs).require(f"scenario {scenario.name!r}")
    if outputs:
        ensure_folder(args.out, f"the --out folder {args.out}")  # before the run, after the budget
    result, summary = scenario.simulate(platform, args.engine, trace=outputs)
    document = {"scenario": scenario.name, "platform": platform.name, "engine": args.engine,
                "params": dict(scenario.params), **summary, "closed_form": scenario.predict(platform)}
    if args.out:
        write_outputs(args.out, result, document, {**document, **flat_summary(summary)} if summary != flat_summary(summary)
                      else None)
    if args.json:
        print_json(document)
        return 0
    from xsim.report.sim_page import summary_rows
    from xsim.units import human_key

    print_table(f"{scenario.name} on {platform.name} ({args.engine} engine)", summary_rows(flat_summary(summary)),
                ["quantity", "mean", "median", "p10", "p90", "n"])
    print_table("closed form", [(k, human_key(k, v)) for k, v in document["closed_form"].items()])
    if args.out:
        print(f"wrote {args.out / 'index.html'} (open it offline), tiles.csv, qtrace.csv, summary.json")
    return 0


def flat_summary(summary: dict, prefix: str = "") -> dict:
    """Nested sections (moe: one per schedule, the selector) as prefixed keys; statistics stay whole."""
    out = {}
    for key, value in summary.items():
        if isinstance(value, dict) and "median" not in value:
            out.update(flat_summary(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def write_outputs(out: Path, result, document: dict, page_document: dict | None = None) -> None:
    """``page_document``: what the page shows when it differs from ``document`` (flat sections)."""
    from xsim.commands.common import _clean
    from xsim.plots import busy_figure, qtrace_figure, timeline_figure
    from xsim.report import sim_page
    from xsim.report.page import Page

    ensure_folder(out, f"the --out folder {out}")
    with atomic_path(out / "tiles.csv", "tile table") as tmp:
        result.write_csv(tmp)
    with atomic_path(out / "qtrace.csv", "q(t) trace") as tmp, open(tmp, "w") as fh:
        fh.write("gpu,t_us,q_bytes\n")
        for gpu, trace in enumerate(result.traces):
            for t, q in zip(*trace):
                fh.write(f"{gpu},{t:.9g},{q:.9g}\n")
    atomic_write(out / "summary.json", json.dumps(_clean(document), indent=2) + "\n", "summary")
    bin_us = max(result.makespan_us / 400, 1e-3)
    figures = {"timeline": timeline_figure(result), "qtrace": qtrace_figure(result), "busy": busy_figure(result, bin_us)}
    page = Page(f"X-Stage simulation: {document['scenario']} on {document['platform']}",
                [sim_page.section(_clean(page_document or document), figures)])
    page.write(out / "index.html", plotlyjs="directory")  # plotly.min.js beside it: opens offline
