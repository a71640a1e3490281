"""Measured tails of a micro point: the per-burst maximum over producers (the slowest CTA).

A persistent kernel ends with its slowest CTA, so beside the mean and p90 of the per-(producer,
burst) issue times the report compares ``issue_max``: per burst (after warm-up), the longest
issue span over the K producers, averaged over bursts and runs. Records measured at or after
``hwkernels.timing.issue_max_samples`` carry it as ``stats.issue_max_us``; for older records it
is derived from the per-burst trace of the same point where one was shipped
(``calibration/records/<platform>-traces/*.npz``), and is absent (NaN) everywhere else: never
invented.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np

from calibration.records import Record

GAP_DIGITS = 3  # trace names and metas carry the gap as run; records as resolved: compare rounded


def point_key(kind: str, params: dict) -> tuple:
    """What identifies a measured point across a record and its trace."""
    return (kind, str(params.get("mechanism")), int(params["producers"]), int(params["burst_bytes"]),
            round(float(params["gap_us"]), GAP_DIGITS), bool(params["aligned"]), int(params.get("threads") or 0),
            str(params.get("target", "remote")))


def trace_issue(start_us: np.ndarray, end_us: np.ndarray, warmup: int) -> np.ndarray:
    """Issue spans [runs, producers, timed bursts] of a trace, microseconds."""
    return (np.asarray(end_us, float) - np.asarray(start_us, float))[:, :, warmup:]


def issue_max_of_trace(start_us: np.ndarray, end_us: np.ndarray, warmup: int) -> float:
    """Mean over runs and timed bursts of the per-burst max over producers of the issue span."""
    issue = trace_issue(start_us, end_us, warmup)
    return float(issue.max(axis=1).mean()) if issue.size else float("nan")


def load_trace_tails(folder) -> dict[tuple, dict]:
    """point key -> {"issue_max_us", "issue_p90_us", "name"} for every trace in ``folder``
    (a path or an importlib resource; empty when None)."""
    out: dict[tuple, dict] = {}
    if folder is None:
        return out
    entries = sorted(Path(folder).iterdir() if isinstance(folder, (str, Path)) else folder.iterdir(),
                     key=lambda e: e.name)
    for entry in entries:
        if not entry.name.endswith(".npz"):
            continue
        with resources.as_file(entry) as path, np.load(path) as data:
            meta = json.loads(str(data["meta"]))
            w = int(meta["warmup_bursts"])
            issue = trace_issue(data["start_us"], data["end_us"], w)
        out[point_key(meta["kind"], meta)] = {
            "issue_max_us": float(issue.max(axis=1).mean()) if issue.size else float("nan"),
            "issue_p90_us": float(np.quantile(issue, 0.9)) if issue.size else float("nan"),
            "name": entry.name[:-4]}
    return out


def measured_issue_max(record: Record, trace_tails: dict | None = None) -> tuple[float, str]:
    """(mean per-burst max issue, where it came from: "record", "trace" or "none")."""
    value = record.stat("issue_max_us", "mean")
    if np.isfinite(value):
        return float(value), "record"
    hit = (trace_tails or {}).get(point_key(record.kind, record.params))
    if hit is not None and np.isfinite(hit["issue_max_us"]):
        return hit["issue_max_us"], "trace"
    return float("nan"), "none"
