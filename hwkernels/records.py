"""Measurement records (docs/records.md, schema `xstage.record/1`): build and append.

An append is one `os.write` of one complete line on a file opened with O_APPEND, then
fsync; if the file does not end with a newline (a line broken by an earlier crash), a
newline is written first so the broken line stays alone and every new record is whole.
"""

import json
import math
import os
import time
from pathlib import Path

SCHEMA = "xstage.record/1"
EXPERIMENTS = ("micro", "moe", "fa-a2a", "loadgate", "power")
MICRO_KINDS = ("periodic", "isolated", "local", "ce-copy", "nccl", "segments")
STAT_KEYS = ("mean", "median", "p10", "p90", "min", "max", "n")


def run_commit() -> tuple[str, bool | None]:
    """(commit, dirty) of the checkout a run measures, from XSTAGE_COMMIT and XSTAGE_DIRTY
    (hwkernels.launch sets both; dirty None when unknown)."""
    dirty = os.environ.get("XSTAGE_DIRTY")
    return (os.environ.get("XSTAGE_COMMIT", "unknown"),
            None if dirty is None else dirty not in ("0", "false", "False", ""))


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def make_record(experiment: str, kind: str, params: dict, stats: dict | None, check: dict,
                platform: dict, commit: str, dirty: bool | None, gbps: float | None = None,
                time_utc: str | None = None) -> dict:
    """One record. A failed check drops every timing statistic (and any bandwidth)."""
    if experiment not in EXPERIMENTS:
        raise ValueError(f'"experiment" must be one of {EXPERIMENTS}, got {experiment!r}.')
    if experiment == "micro" and kind not in MICRO_KINDS:
        raise ValueError(f'"kind" must be one of {MICRO_KINDS}, got {kind!r}.')
    if "ok" not in check:
        raise ValueError('"check" must contain "ok".')
    ok = bool(check["ok"])
    check = dict(check)
    err = check.get("max_abs_err")
    if isinstance(err, float) and not math.isfinite(err):
        check["max_abs_err"] = None   # a NaN (poisoned, never written) slot: JSON has no inf
    record = {
        "schema": SCHEMA,
        "experiment": experiment,
        "kind": kind,
        "params": dict(params),
        "stats": {},
        "check": dict(check),
        "platform": dict(platform),
        "commit": commit,
        "dirty": dirty,
        "time_utc": time_utc or utc_now(),
    }
    if ok:
        for name, s in (stats or {}).items():
            missing = [k for k in STAT_KEYS if k not in s]
            if missing:
                raise ValueError(f'stats "{name}" misses {missing}.')
            record["stats"][name] = {k: s[k] for k in STAT_KEYS}
        if gbps is not None:
            if not math.isfinite(gbps) or gbps <= 0:
                raise ValueError('"gbps" must be a positive finite number.')
            record["gbps"] = float(gbps)
    return record


def append_record(path: str | os.PathLike, record: dict) -> None:
    """Append one record as a single complete JSON line, then flush and fsync."""
    line = json.dumps(record, sort_keys=False, allow_nan=False, separators=(",", ":"))
    if "\n" in line:
        raise ValueError("a record must serialise to one line")
    data = (line + "\n").encode("utf-8")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        if _needs_newline(fd):
            data = b"\n" + data
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(f"short write to {path}: {written} of {len(data)} bytes")
        os.fsync(fd)
    finally:
        os.close(fd)


def _needs_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    if size == 0:
        return False
    return os.pread(fd, 1, size - 1) != b"\n"


def read_records(path: str | os.PathLike) -> list[dict]:
    """All whole records of a file; a line that is not valid JSON raises with its number."""
    out = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: broken record line ({e.msg})") from None
    return out
