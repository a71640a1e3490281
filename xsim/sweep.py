"""Parameter sweeps: the cross product of grid axes over a scenario, run in parallel, streamed to disk.

A grid axis is ``KEY=START:STOP:STEP`` (inclusive, numbers with the key's unit: ``4KB:64KB:4KB``)
or ``KEY=a,b,c``. Every value goes through the scenario builder's declared :class:`Param`, so
a wrong unit or an out-of-range value is a :class:`ParamError` before anything runs.

Each point becomes one row: every parameter of the scenario, the builder's summary flattened
(``issue_us_mean``, ``period_us_p90``, ``makespan_us``, ...) and the closed form's prediction
(``pred_issue_us``, ...). Rows are appended to ``rows.jsonl`` and ``rows.csv`` as they finish,
so memory stays flat, an interrupted sweep keeps what it finished, and ``resume`` skips it.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from xsim.params import PARSERS, Param, ParamError, resolve
from xsim.platform import Platform
from xsim.scenario import Scenario, ScenarioError

MAX_POINTS = 20_000          # a cap on one sweep; narrow the grid or split it beyond this
RANGE_KINDS = ("bytes", "us", "gbps", "int", "float")
STATS_KEYS = ("mean", "median", "p10", "p90", "n")
ROWS_JSONL, ROWS_CSV = "rows.jsonl", "rows.csv"


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


def init_worker(scenario: Scenario, platform: Platform, engine: str) -> None:
    _WORKER.update(scenario=scenario, platform=platform, engine=engine)


def run_point(point: dict) -> dict:
    """Simulate one point; a row (or ``{"error": message}`` if the point cannot be built)."""
    from xsim.des import simulate

    scenario, platform = _WORKER["scenario"], _WORKER["platform"]
    start = time.perf_counter()
    try:
        params = resolve(scenario.module.PARAMS, {**scenario.params, **point}, f"scenario {scenario.name!r}")
        s = replace(scenario, params=params)
        result = simulate(s.build(platform), engine=_WORKER["engine"], trace=False)
        summary, prediction = s.summarize(result), s.predict(platform)
    except (ScenarioError, ParamError) as exc:
        return {"point": point_id(point), "error": f"point {point_id(point)}: {exc}"}
    row = {"point": point_id(point), **params, **_flatten(summary),
           **{f"pred_{k}": v for k, v in prediction.items()}}
    row["wall_s"] = time.perf_counter() - start
    return row


# ---- the sweep -----------------------------------------------------------------------------------

def _clean(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    return None if isinstance(value, float) and not math.isfinite(value) else value


def finished_rows(out_dir: Path) -> list[dict]:
    """Rows already in ``rows.jsonl`` (a torn last line from an interrupted write is dropped)."""
    path = out_dir / ROWS_JSONL
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                break
    return rows


class RowWriter:
    """Appends rows to rows.jsonl and rows.csv, one flushed line each."""

    def __init__(self, out_dir: Path, previous: list[dict]):
        out_dir.mkdir(parents=True, exist_ok=True)
        self.columns = list(previous[0]) if previous else None
        self._jsonl = open(out_dir / ROWS_JSONL, "w")
        self._csv_file = open(out_dir / ROWS_CSV, "w", newline="")
        self._csv = None
        for row in previous:  # rewrite what survived, so both files agree
            self.write(row)

    def write(self, row: dict) -> None:
        row = {k: _clean(v) for k, v in row.items()}
        if self._csv is None:
            self.columns = self.columns or list(row)
            self._csv = csv.DictWriter(self._csv_file, self.columns, extrasaction="ignore")
            self._csv.writeheader()
        self._jsonl.write(json.dumps(row) + "\n")
        self._csv.writerow(row)
        self._jsonl.flush()
        self._csv_file.flush()

    def close(self) -> None:
        for fh in (self._jsonl, self._csv_file):
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()


def _results(points: list[dict], jobs: int, init_args: tuple) -> Iterator[dict]:
    if jobs <= 1 or len(points) <= 1:
        init_worker(*init_args)
        yield from map(run_point, points)
        return
    import multiprocessing

    chunk = max(1, min(16, len(points) // (4 * jobs)))
    with multiprocessing.get_context("fork").Pool(jobs, init_worker, init_args) as pool:
        yield from pool.imap(run_point, points, chunksize=chunk)  # in plan order, streamed


def run_sweep(scenario: Scenario, platform: Platform, points: list[dict], out_dir: Path, engine: str = "fast",
              jobs: int = 1, resume: bool = False, on_row: Callable[[dict], None] | None = None) -> int:
    """Run every point not already finished (with ``resume``), streaming rows to ``out_dir``;
    returns the number of rows the files hold. Rows are not kept in memory."""
    previous = finished_rows(out_dir) if resume else []
    done = {row["point"] for row in previous}
    todo = [p for p in points if point_id(p) not in done]
    if engine == "fast" and todo:
        _warm_fast_engine()  # compile or load once, before the workers fork
    writer = RowWriter(out_dir, previous)
    count = len(previous)
    del previous
    try:
        for row in _results(todo, jobs, (scenario, platform, engine)):
            if "error" in row:
                raise ScenarioError(row["error"])
            writer.write(row)
            count += 1
            if on_row:
                on_row(row)
    finally:
        writer.close()
    return count


def _warm_fast_engine() -> None:
    from xsim.des.fast_engine import warm_up

    warm_up()
