"""``xsim sweep``: a scenario over a grid of parameters, in parallel, streamed to a tidy table."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from xsim.commands.common import add_json_option, add_platform_options, platform_from_args, print_json, print_table
from xsim.des import ENGINES
from xsim.params import ParamError
from xsim.scenario import load_scenario
from xsim.sweep import ROWS_CSV, ROWS_JSONL, finished_rows, parse_axis, plan, run_sweep
from xsim.units import human_key


def add_parser(sub):
    p = sub.add_parser("sweep", help="run a scenario over a grid of parameters (tidy CSV/JSONL + plots)")
    p.add_argument("scenario", help="shipped scenario name or TOML file")
    p.add_argument("--grid", action="append", default=[], required=True, metavar="KEY=START:STOP:STEP|KEY=a,b,c",
                   help="a swept parameter (repeat for a cross product); values take the key's unit")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a fixed parameter")
    p.add_argument("--engine", choices=ENGINES, default="fast", help="fast (numba, default) or simpy")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="worker processes (at most one per point and per core, and what the memory holds)")
    p.add_argument("--out", type=Path, default=Path("sweep-out"), metavar="DIR",
                   help=f"where {ROWS_CSV}, {ROWS_JSONL} and sweep.html go (default sweep-out)")
    p.add_argument("--resume", action="store_true", help="keep the rows already in DIR and run only the rest")
    p.add_argument("--scheduler", metavar="ADDRESS|local:N", default=None,
                   help="run the points on dask: a running scheduler (tcp://HOST:PORT) or a LocalCluster of N "
                        "worker processes (needs the optional extra 'cluster'); default: --jobs local processes")
    p.add_argument("--no-plots", action="store_true", help="skip sweep.html")
    add_platform_options(p)
    add_json_option(p)
    return p


class _Progress:
    """A rich progress bar on stderr, started once the sweep knows what it will run."""

    def __init__(self, total: int):
        self.total, self.progress, self.info = total, None, {}

    def start(self, info: dict) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

        self.info = info
        self.progress = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True),
                                 transient=False)
        self.task = self.progress.add_task("sweep", total=self.total, completed=info["skipped"])
        self.progress.start()

    def advance(self, row) -> None:
        self.progress.advance(self.task)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _human(key: str, value) -> str:
    """Axis values in the unit their key carries (``gap_us: 0 µs, 1 µs, ...``), the rest as they are."""
    if isinstance(value, dict):
        return "; ".join(f"{k}: " + ", ".join(human_key(k, v) for v in vs) for k, vs in value.items())
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return human_key(key, value)


def run(args) -> int:
    if args.jobs < 1:
        raise ParamError(f"--jobs must be >= 1, got {args.jobs}")
    if args.scheduler is not None:
        from xsim.sweep_cluster import _distributed, parse_scheduler

        parse_scheduler(args.scheduler)
        _distributed()  # says in one line that the extra is missing, before any work
    scenario = load_scenario(args.scenario).with_overrides(args.set)
    platform = platform_from_args(args, None if args.platform else scenario.platform or None)
    axes = [parse_axis(text, scenario.module.PARAMS) for text in args.grid]
    fixed = {text.partition("=")[0].strip() for text in args.set}
    both = sorted(fixed & {a.key for a in axes})
    if both:
        raise ParamError(f"{both[0]!r} is given both as --set and as --grid")
    points = plan(scenario, axes)
    progress = _Progress(len(points))
    try:
        count = run_sweep(scenario, platform, points, args.out, engine=args.engine, jobs=args.jobs,
                          resume=args.resume, on_row=progress.advance, on_start=progress.start,
                          scheduler=args.scheduler)
    finally:
        progress.stop()
    skipped = progress.info["skipped"]
    figures = []
    if not args.no_plots:
        from xsim.sweep_plots import write_figures

        figures = write_figures(finished_rows(args.out), [a.key for a in axes], args.out)
    document = {"scenario": scenario.name, "platform": platform.name, "engine": args.engine,
                "axes": {a.key: list(a.values) for a in axes}, "points": len(points), "skipped": skipped,
                "rows": count, "jobs": progress.info["jobs"], "executor": progress.info["executor"],
                "events": progress.info["events"], "out": str(args.out),
                "files": [str(args.out / ROWS_CSV), str(args.out / ROWS_JSONL)] + [str(f) for f in figures]}
    if args.json:
        print_json(document)
    else:
        print_table(f"sweep of {scenario.name} on {platform.name}", [(k, _human(k, v)) for k, v in document.items()])
    sys.stderr.flush()
    return 0
