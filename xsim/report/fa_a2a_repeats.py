"""The headline's ratio targets over every run of its kernel: the shipped run and its repeats.

A single run's fused / FA-only and hiding ratio above the threshold can sit inside the run-to-run
spread of their bounds (docs/fa-a2a-report.md, "Targets"). The report reads the targets on the
shipped run; this puts every repeat of the same series beside it: each record file in
``calibration/records/repeats/`` named ``<platform>-fa-a2a-*.jsonl[.gz]`` whose records form a series
with the headline's key (:data:`~xsim.report.fa_a2a_points.SERIES_KEYS`: tile shape, destination,
attention kernel, program stagger), read at the sequence lengths it measured at or above the
headline's 2 M_ub*. Per target: each run's value (the worst over its M), how many runs meet the
bound, and their median. The bound itself is unchanged; the count says how often one run meets it.
"""

from __future__ import annotations

import math

import numpy as np

from calibration.records import RecordSet, parse_texts, shipped_repeat_files
from xsim.report.fa_a2a_points import SERIES_KEYS, Point, Series, collect, series_key
from xsim.report.fa_a2a_summary import TARGETS, _check, extreme

RUN_TARGETS = {"fused_over_fa_above_threshold": ("fused_over_fa", max),
               "hiding_min_above_threshold": ("hiding", min)}


def shipped_repeats(platform: str) -> list[tuple[str, RecordSet]]:
    """(file name, records) of the platform's shipped fa-a2a repeat files, sorted by name."""
    return [(e.name, parse_texts([(e.name, e.read_bytes())])) for e in shipped_repeat_files(platform, "fa-a2a")]


def key_of(s: Series) -> tuple:
    """A series' key as :func:`~xsim.report.fa_a2a_points.collect` groups records by it."""
    return tuple(s.key[k] for k in SERIES_KEYS)


def series_commits(rs: RecordSet, key: tuple) -> list[str]:
    """The commits the records of one series (its :func:`key_of`) were measured at."""
    return sorted({str(r.data.get("commit", "?")) for r in rs.select("fa-a2a") if series_key(r.params) == key})


def run_values(name: str, commits: list[str], points: list[Point], m_ub: float) -> dict:
    """One run's worst value of each ratio target over its points at or above 2 M_ub*."""
    above = [p for p in points if p.seq_len >= 2 * m_ub]
    out = {"run": name, "commits": commits, "seq_lens": [p.seq_len for p in above]}
    for target, (attr, worst) in RUN_TARGETS.items():
        per_m = {p.seq_len: getattr(p, attr) for p in above if math.isfinite(getattr(p, attr))}
        out[target] = extreme(list(per_m.values()), worst)
        out[f"{target}_by_m"] = per_m
    return out


def over_runs(head: Series, m_ub: float | None, repeats: list[tuple[str, RecordSet]], shipped_commits: list[str]) -> dict | None:
    """Every run of the headline series (the shipped one first) and, per ratio target, how many meet it."""
    if m_ub is None:
        return None
    want = key_of(head)
    runs = [run_values("shipped", shipped_commits, head.points, m_ub)]
    for name, rs in repeats:
        by_m = collect(rs, []).get(want)
        if by_m:
            runs.append(run_values(name, series_commits(rs, want), [by_m[m] for m in sorted(by_m)], m_ub))
    out: dict = {"runs": runs}
    for target in RUN_TARGETS:
        op, bound = TARGETS[target]
        values = [r[target] for r in runs if r[target] is not None]
        out[target] = {"values": values, "n_runs": len(values),
                       "n_pass": sum(bool(_check(v, op, bound)) for v in values),
                       "median": float(np.median(values)) if values else None}
    return out
