"""Parameter sweeps: the cross product of grid axes over a scenario, run in parallel, streamed to disk.

A grid axis is ``KEY=START:STOP:STEP`` (inclusive, numbers with the key's unit: ``4KB:64KB:4KB``)
or ``KEY=a,b,c``. Every value goes through the scenario builder's declared :class:`Param`, so
a wrong unit or an out-of-range value is a :class:`ParamError` before anything runs.

Each point becomes one row: every parameter of the scenario, the builder's summary flattened
(``issue_us_mean``, ``period_us_p90``, ``makespan_us``, ...) and the closed form's prediction
(``pred_issue_us``, ...). Rows are appended to ``rows.jsonl`` and ``rows.csv`` as they finish,
so memory stays flat, an interrupted sweep keeps what it finished, and ``resume`` skips it.
The files, the check that a resume is the same sweep and the crash repair are
:class:`xsim.rowstore.RowStore`'s; before anything runs, every point's memory and event count
are estimated (:mod:`xsim.budget`) and the worker count is capped by the points, the cores
and the memory.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from xsim.budget import MAX_EVENTS, BudgetError, estimate, memory_limit_bytes
from xsim.params import PARSERS, Param, ParamError, resolve
from xsim.platform import Platform
from xsim.rowstore import ROWS_CSV, ROWS_JSONL, RowStore, identity
from xsim.scenario import Scenario, ScenarioError

MAX_POINTS = 20_000          # a cap on one sweep; narrow the grid or split it beyond this
RANGE_KINDS = ("bytes", "us", "gbps", "int", "float")
MAX_SWEEP_EVENTS = 10 * MAX_EVENTS   # all points together (about 2e9 tiles)
STATS_KEYS = ("mean", "median", "p10", "p90", "n")


@dataclass(frozen=True)
class Axis:
    """One grid axis: a declared parameter and its values, already parsed to the key's unit."""

    key: str
    values: tuple

    def __post_init__(self) -> None:
        if not self.values:
            raise ParamError(f'--grid {self.key}: no values')


def _range_values(key: str, param: Param, text: str) -> list:
    if param.kind not in RANGE_KINDS:
        raise ParamError(f'--grid {key}: a {param.kind} parameter takes a list (a,b,c), not a range')
    parts = text.split(":")
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise ParamError(f'--grid {key}={text}: a range is START:STOP:STEP')
    try:
        start, stop, step = (float(PARSERS[param.kind](p.strip())) for p in parts)
    except ValueError as exc:
        raise ParamError(f'--grid {key}: {exc}') from None
    if step == 0:
        raise ParamError(f'--grid {key}={text}: the step is zero')
    count = math.floor((stop - start) / step * (1 + 1e-12) + 1e-9) + 1
    if count <= 0:
        raise ParamError(f'--grid {key}={text}: the range is empty (steps of {step:g} from {start:g} never reach {stop:g})')
    if count > MAX_POINTS:
        raise ParamError(f'--grid {key}={text}: {count} values, more than the cap of {MAX_POINTS}')
    return [round(start + i * step, 12) for i in range(count)]


def parse_axis(text: str, declared: Mapping[str, Param]) -> Axis:
    """``'gap_us=0:10:0.5'`` or ``'burst_bytes=8KB,16KB'`` -> an :class:`Axis` of parsed values."""
    key, sep, spec = text.partition("=")
    key, spec = key.strip(), spec.strip()
    if not sep or not key or not spec:
        raise ParamError(f"--grid expects KEY=START:STOP:STEP or KEY=a,b,c, got {text!r}")
    if key not in declared:
        raise ParamError(f"--grid: unknown key {key!r}; known keys: {', '.join(sorted(declared))}")
    param = declared[key]
    raw = _range_values(key, param, spec) if ":" in spec else [v.strip() for v in spec.split(",")]
    if any(v == "" for v in raw):
        raise ParamError(f"--grid {key}={spec}: an empty value in the list")
    values = tuple(param.parse(key, v) for v in raw)
    return Axis(key, tuple(dict.fromkeys(values)))  # a repeated value runs once


def plan(scenario: Scenario, axes: list[Axis]) -> list[dict]:
    """The cross product of the axes: one dict of swept values per point, first axis slowest."""
    keys = [a.key for a in axes]
    if len(set(keys)) != len(keys):
        raise ParamError(f"--grid: a key is given twice ({', '.join(keys)})")
    count = math.prod(len(a.values) for a in axes)
    if count > MAX_POINTS:
        raise ParamError(f"the sweep has {count} points, more than the cap of {MAX_POINTS}; narrow the grid")
    return [dict(zip(keys, combo)) for combo in itertools.product(*(a.values for a in axes))]


def point_id(point: Mapping[str, Any]) -> str:
    """A stable name of a point, used to skip it on resume."""
    return json.dumps({k: point[k] for k in sorted(point)}, sort_keys=True)


def _flatten(summary: Mapping[str, Any], prefix: str = "") -> dict:
    row = {}
    for key, value in summary.items():
        if isinstance(value, Mapping):
            stats = {k: value[k] for k in STATS_KEYS if k in value}
            row.update(_flatten(stats if stats else value, f"{prefix}{key}_"))
        else:
            row[f"{prefix}{key}"] = value
    return row


# ---- one point, in a worker --------------------------------------------------------------------

_WORKER: dict = {}


def init_worker(scenario: Scenario, platform: Platform, engine: str, in_process: bool = True) -> None:
    """Set a worker up; a worker process ignores Ctrl-C (its parent stops it) and dies with it."""
    _WORKER.update(scenario=scenario, platform=platform, engine=engine)
    if not in_process:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's: terminate() must just end it
        _die_with_parent()


def _die_with_parent() -> None:
    try:  # Linux: a worker is killed when its parent dies, even by SIGKILL
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def run_point(point: dict) -> dict:
    """Simulate one point; a row (or ``{"error": message}`` if the point cannot be built)."""
    scenario, platform = _WORKER["scenario"], _WORKER["platform"]
    start = time.perf_counter()
    try:
        params = resolve(scenario.module.PARAMS, {**scenario.params, **point}, f"scenario {scenario.name!r}")
        s = replace(scenario, params=params)
        _, summary = s.simulate(platform, _WORKER["engine"], trace=False)
        prediction = s.predict(platform)
    except (ScenarioError, ParamError, BudgetError) as exc:
        return {"point": point_id(point), "error": f"point {point_id(point)}: {exc}"}
    row = {"point": point_id(point), **params, **_flatten(summary),
           **{f"pred_{k}": v for k, v in prediction.items()}}
    row["wall_s"] = time.perf_counter() - start
    return row


# ---- the sweep -----------------------------------------------------------------------------------

def finished_rows(out_dir: Path) -> list[dict]:
    """Rows already in ``rows.jsonl`` (a torn last line from an interrupted write is dropped)."""
    from xsim.fileio import OutputError, read_bytes
    from xsim.rowstore import MAX_ROWS_BYTES

    path = Path(out_dir) / ROWS_JSONL
    rows = []
    if path.exists():
        data = read_bytes(path, "sweep rows", OutputError, limit=MAX_ROWS_BYTES, register=False)
        for line in data.decode("utf-8", errors="replace").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                break
    return rows


def budget(scenario: Scenario, platform: Platform, points: list[dict], engine: str, jobs: int) -> tuple[int, dict]:
    """Every point estimated before anything runs: refused (BudgetError) if one point cannot run
    or all together are too many events; returns the worker count (at most one per point and
    per core, and as many as the memory holds) and the sweep's estimate."""
    limit = memory_limit_bytes()
    largest, events = None, 0
    for point in points:
        try:
            e = estimate(scenario.module, {**scenario.params, **point}, platform, engine, trace=False)
        except ValueError as exc:  # a point the builder refuses: said before anything runs
            raise ScenarioError(f"point {point_id(point)}: {exc}") from None
        problem = e.problem(limit)
        if problem is not None:
            raise BudgetError(f"sweep point {point_id(point)} cannot run: {problem}")
        events += e.events
        largest = e if largest is None or e.memory_bytes > largest.memory_bytes else largest
    if events > MAX_SWEEP_EVENTS:
        raise BudgetError(f"the sweep needs {events:,} events over {len(points)} points, more than the limit of "
                          f"{MAX_SWEEP_EVENTS:,}; narrow the grid or shorten the points")
    cap = [jobs, max(len(points), 1), os.cpu_count() or 1]
    if largest is not None:
        cap.append(max(1, limit // largest.memory_bytes))
    return max(1, min(cap)), {"events": events, "largest_point_bytes": largest.memory_bytes if largest else 0,
                              "memory_limit_bytes": limit}


def _results(points: list[dict], jobs: int, init_args: tuple) -> Iterator[dict]:
    """Rows as the points finish (any order): in this process, or in ``jobs`` forked workers that
    a return, an error or an interrupt here terminates before this generator ends."""
    if jobs <= 1 or len(points) <= 1:
        init_worker(*init_args)
        yield from map(run_point, points)
        return
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(jobs, init_worker, (*init_args, False)) as pool:
        yield from pool.imap_unordered(run_point, points)  # every finished row at once, not in plan order


class _Stop:
    """While a sweep runs: SIGTERM becomes KeyboardInterrupt, so it stops as Ctrl-C does."""

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._raise)
        return self

    @staticmethod
    def _raise(signum, frame):
        raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)


def _local_cluster_fits(scheduler: str | None, info: dict) -> None:
    from xsim.sweep_cluster import parse_scheduler

    if scheduler is None:
        return
    kind, workers = parse_scheduler(scheduler)
    if kind == "local" and workers * info["largest_point_bytes"] > info["memory_limit_bytes"]:
        raise BudgetError(f"--scheduler {scheduler}: {workers} workers of up to "
                          f"{info['largest_point_bytes'] / 2**30:.3g} GiB each do not fit in the "
                          f"{info['memory_limit_bytes'] / 2**30:.3g} GiB this machine can give")


def run_sweep(scenario: Scenario, platform: Platform, points: list[dict], out_dir: Path, engine: str = "fast",
              jobs: int = 1, resume: bool = False, on_row: Callable[[dict], None] | None = None,
              on_start: Callable[[dict], None] | None = None, scheduler: str | None = None) -> int:
    """Run every point not already finished (with ``resume``), appending rows to ``out_dir``;
    returns the number of rows the files hold. Rows are not kept in memory. ``on_start`` gets
    what was decided before the first point: ``jobs``, ``skipped``, ``todo``, ``events``.
    ``scheduler`` (``local:N`` or a dask scheduler address) runs the points on dask
    (:mod:`xsim.sweep_cluster`) instead of ``jobs`` local processes; nothing else differs."""
    swept = sorted({k for p in points for k in p})
    jobs, info = budget(scenario, platform, points, engine, jobs)
    _local_cluster_fits(scheduler, info)
    executor = None
    if scheduler is not None:
        from xsim.sweep_cluster import DaskExecutor

        executor = DaskExecutor(scheduler)
    try:
        return _run(scenario, platform, points, Path(out_dir), engine, jobs, resume, on_row, on_start, executor,
                    identity(scenario, platform, swept, engine), info)
    finally:
        if executor is not None:
            executor.close()


def _run(scenario, platform, points, out_dir, engine, jobs, resume, on_row, on_start, executor, ident, info) -> int:
    store = RowStore(out_dir, ident, resume)
    try:
        done = store.finished
        todo = [p for p in points if point_id(p) not in done]
        jobs = min(jobs, max(len(todo), 1))
        if executor is not None:
            jobs = executor.workers
        if on_start:
            on_start({**info, "jobs": jobs, "skipped": len(points) - len(todo), "todo": len(todo),
                      "executor": f"dask {executor.scheduler}" if executor else "local processes"})
        if engine == "fast" and todo and executor is None:
            _warm_fast_engine()  # compile or load once, before the workers fork
        with _Stop():
            if executor is None:
                results = _results(todo, jobs, (scenario, platform, engine))
            else:
                results = executor.results(todo, (scenario, platform, engine))
            try:
                for row in results:
                    if "error" in row:
                        raise ScenarioError(row["error"])
                    if row["point"] in done:
                        continue  # a point run twice (a chunk re-run after its worker died): one row
                    store.append(row)
                    done.add(row["point"])
                    if on_row:
                        on_row(row)
            finally:
                results.close()  # the workers are gone before the files close
    finally:
        store.close()
    return len(store.points)


def _warm_fast_engine() -> None:
    from xsim.des.fast_engine import warm_up

    warm_up()
