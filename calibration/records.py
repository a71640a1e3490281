"""Read and validate measurement records (JSON Lines, gzipped or not; schema ``xstage.record/1``).

See ``docs/records.md`` for the schema. :func:`load_records` reads one or more files into a
:class:`RecordSet`: every line parsed and checked, records whose ``check.ok`` is false skipped
and counted, one platform across all files, and the sha256 of the input bytes. Any problem is
a :class:`RecordError` naming the file and line.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

from xsim.fileio import gunzipped, parse_json, read_bytes

SCHEMA = "xstage.record/1"
EXPERIMENTS = ("micro", "moe", "fa-a2a", "loadgate", "power")
SUFFIXES = (".jsonl", ".jsonl.gz")   # a record file: JSON Lines, or the same gzipped (the repeats)
STAT_KEYS = ("mean", "median", "p10", "p90", "min", "max", "n")
REQUIRED_FIELDS = ("schema", "experiment", "kind", "params", "stats", "check", "platform", "commit")
PLATFORM_IDENTITY = ("gpu", "sms", "gpu_count", "driver")  # required, and must agree within one fit
PLATFORM_SAME = PLATFORM_IDENTITY + ("link",)               # must agree where given (a link is a platform)
MICRO_TIMED_PARAMS = ("producers", "burst_bytes", "gap_us", "aligned", "mechanism")
MICRO_TIMED_KINDS = ("periodic", "isolated", "local")
# The type of each micro param a fit or a report reads: (check, what it must be).
_NUMBER = (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number")
_COUNT = (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "an integer >= 0")
MICRO_PARAM_TYPES = {
    "producers": (lambda v: _COUNT[0](v) and 0 < v <= 100_000, "an integer in 1..100000"),
    "burst_bytes": (lambda v: _NUMBER[0](v) and v > 0, "a number > 0"),
    "gap_us": (lambda v: _NUMBER[0](v) and v >= 0, "a number >= 0"),
    "aligned": (lambda v: isinstance(v, bool), "true or false"),
    "mechanism": (lambda v: isinstance(v, str), "a string"),
    "warmup_bursts": _COUNT, "bursts": (lambda v: _COUNT[0](v) and 0 < v <= 10_000_000, "an integer in 1..10000000"),
    "threads": _COUNT, "target": (lambda v: isinstance(v, str), "a string"),
    "pattern": (lambda v: isinstance(v, str), "a string"),
}


class RecordError(ValueError):
    """A records file that cannot be read or holds an invalid record (names file and line)."""


@dataclass(frozen=True)
class Record:
    """One valid record and where it came from."""

    data: Mapping[str, Any]
    source: str   # file name (no directory: provenance must not depend on where it lies)
    line: int

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"

    @property
    def experiment(self) -> str:
        return self.data["experiment"]

    @property
    def kind(self) -> str:
        return self.data["kind"]

    @property
    def params(self) -> Mapping[str, Any]:
        return self.data["params"]

    def stat(self, name: str, key: str = "mean") -> float:
        """One statistic, e.g. ``stat("issue_us", "median")``; NaN if absent."""
        return float(self.data["stats"].get(name, {}).get(key, float("nan")))


@dataclass(frozen=True)
class RecordSet:
    """Valid records of one platform, plus what was skipped and the hash of the input."""

    records: tuple[Record, ...]
    skipped_failed_check: int
    sha256: str                          # of the bytes of all files, in the order given
    files: tuple[tuple[str, str], ...]   # (file name, sha256) per file
    platform: Mapping[str, Any]

    def select(self, experiment: str | None = None, kind: str | None = None, **params) -> list[Record]:
        """Records of an experiment/kind whose params equal every ``params`` item given."""
        out = []
        for r in self.records:
            if experiment is not None and r.experiment != experiment:
                continue
            if kind is not None and r.kind != kind:
                continue
            if all(r.params.get(k) == v for k, v in params.items()):
                out.append(r)
        return out

    @property
    def commits(self) -> list[str]:
        return sorted({str(r.data["commit"]) for r in self.records})

    @property
    def experiments(self) -> list[str]:
        return sorted({r.experiment for r in self.records})

    @property
    def last_time_utc(self) -> str | None:
        times = sorted(str(r.data["time_utc"]) for r in self.records if r.data.get("time_utc"))
        return times[-1] if times else None


def _check_stats(stats: Any, where: str) -> None:
    if not isinstance(stats, Mapping):
        raise RecordError(f'{where}: "stats" must be an object')
    for name, s in stats.items():
        if not isinstance(s, Mapping):
            raise RecordError(f'{where}: stats "{name}" must be an object')
        missing = [k for k in STAT_KEYS if k not in s]
        if missing:
            raise RecordError(f'{where}: stats "{name}" is missing {", ".join(missing)}')
        for key in STAT_KEYS:
            if not _NUMBER[0](s[key]):
                raise RecordError(f'{where}: stats "{name}" "{key}" must be a number, got {s[key]!r}')
        if not _COUNT[0](s["n"]):
            raise RecordError(f'{where}: stats "{name}" "n" must be an integer >= 0, got {s["n"]!r}')


def validate(data: Any, where: str) -> bool:
    """Check one parsed line; returns ``check.ok``. Raises RecordError naming ``where``."""
    if not isinstance(data, Mapping):
        raise RecordError(f"{where}: a record must be a JSON object")
    missing = [k for k in REQUIRED_FIELDS if k not in data]
    if missing:
        raise RecordError(f"{where}: record is missing {', '.join(repr(k) for k in missing)}")
    if data["schema"] != SCHEMA:
        raise RecordError(f'{where}: "schema" must be {SCHEMA!r}, got {data["schema"]!r}')
    for key in ("experiment", "kind"):
        if not isinstance(data[key], str):
            raise RecordError(f'{where}: "{key}" must be a string, got {data[key]!r}')
    if data["experiment"] not in EXPERIMENTS:
        raise RecordError(f'{where}: "experiment" must be one of {", ".join(EXPERIMENTS)}, got {data["experiment"]!r}')
    for key in ("params", "check", "platform"):
        if not isinstance(data[key], Mapping):
            raise RecordError(f'{where}: "{key}" must be an object')
    if "ok" not in data["check"]:
        raise RecordError(f'{where}: "check" is missing "ok"')
    missing = [k for k in PLATFORM_IDENTITY if k not in data["platform"]]
    if missing:
        raise RecordError(f'{where}: "platform" is missing {", ".join(missing)}')
    if not isinstance(data["check"]["ok"], bool):
        raise RecordError(f'{where}: "check" "ok" must be true or false, got {data["check"]["ok"]!r}')
    ok = data["check"]["ok"]
    if not ok:
        return False
    _check_stats(data["stats"], where)
    if data["experiment"] == "micro" and data["kind"] in MICRO_TIMED_KINDS:
        missing = [k for k in MICRO_TIMED_PARAMS if k not in data["params"]]
        if missing:
            raise RecordError(f'{where}: "params" is missing {", ".join(missing)}')
        for key, (check, what) in MICRO_PARAM_TYPES.items():
            if key in data["params"] and not check(data["params"][key]):
                raise RecordError(f'{where}: "params" "{key}" must be {what}, got {data["params"][key]!r}')
        stats = data["stats"]
        if "issue_us" not in stats and "kernel_us" not in stats:
            raise RecordError(f'{where}: "stats" has neither issue_us nor kernel_us')
        if "issue_us" in stats and data["kind"] != "isolated" and "period_us" not in stats:
            raise RecordError(f'{where}: "stats" has issue_us but is missing period_us')
    return True


def _identity(platform: Mapping[str, Any]) -> dict:
    return {k: platform.get(k) for k in PLATFORM_SAME}


def _parse_file(text: str, source: str) -> tuple[list[Record], int]:
    records, skipped = [], 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            data = parse_json(line)
        except json.JSONDecodeError as exc:
            raise RecordError(f"{where}: broken JSON line ({exc.msg} at column {exc.colno})") from None
        except ValueError as exc:  # a non-finite number, an integer too long to read
            raise RecordError(f"{where}: {exc}") from None
        if validate(data, where):
            records.append(Record(data, source, number))
        else:
            skipped += 1
    return records, skipped


def parse_texts(texts: Sequence[tuple[str, bytes]]) -> RecordSet:
    """Parse ``(file name, bytes)`` pairs into one RecordSet (one platform across all)."""
    records: list[Record] = []
    skipped, files = 0, []
    whole = hashlib.sha256()
    for source, raw in texts:
        raw = gunzipped(raw, source, RecordError)   # a gzipped file (repeats/*.jsonl.gz) is its text
        whole.update(raw)
        files.append((source, hashlib.sha256(raw).hexdigest()))
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordError(f"{source}: not UTF-8 text (byte {exc.start})") from None
        found, n_skipped = _parse_file(text, source)
        records += found
        skipped += n_skipped
    if not records:
        raise RecordError(f"no valid records in {', '.join(s for s, _ in texts) or 'the input'}")
    first = records[0]
    reference = _identity(first.data["platform"])
    for r in records[1:]:
        ident = _identity(r.data["platform"])
        if ident != reference:
            diff = ", ".join(f"{k} {ident[k]!r} vs {reference[k]!r}" for k in PLATFORM_SAME if ident[k] != reference[k])
            raise RecordError(f"{r.where}: mixed platforms: {diff} (first record at {first.where})")
    return RecordSet(tuple(records), skipped, whole.hexdigest(), tuple(files), dict(first.data["platform"]))


def load_records(paths: Sequence[str | Path]) -> RecordSet:
    """Read record files; any problem is a RecordError naming the file (and line)."""
    if not paths:
        raise RecordError("no records files given")
    texts = [(Path(path).name, read_bytes(path, "records", RecordError)) for path in paths]
    return parse_texts(texts)


def record_stem(name: str) -> str:
    """A record file's name without its suffix (``.jsonl`` or ``.jsonl.gz``)."""
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def shipped_record_files(platform: str | None = None) -> list:
    """The record files that ship with the package (``calibration/records/*.jsonl``), sorted.

    Shipped files are named ``<platform>-<experiment>[-...].jsonl``; with ``platform`` given, only
    that platform's files (one RecordSet holds one platform; ``h200`` does not match ``h200-pcie-host-*``).
    """
    folder = resources.files("calibration") / "records"
    if not folder.is_dir():
        return []
    prefixes = tuple(f"{platform}-{e}" for e in EXPERIMENTS) if platform is not None else ("",)
    return sorted((e for e in folder.iterdir() if e.name.endswith(SUFFIXES) and e.name.startswith(prefixes)),
                  key=lambda e: e.name)


def shipped_repeat_files(platform: str, experiment: str) -> list:
    """The repeat runs that ship beside the records (``calibration/records/repeats/``), of one
    platform and experiment (``<platform>-<experiment>-*.jsonl``, gzipped: ``.jsonl.gz``), sorted by name."""
    folder = resources.files("calibration") / "records" / "repeats"
    if not folder.is_dir():
        return []
    return sorted((e for e in folder.iterdir() if e.name.startswith(f"{platform}-{experiment}-")
                   and e.name.endswith(SUFFIXES)), key=lambda e: e.name)


def load_shipped_records(experiment: str | None = None, platform: str | None = None) -> RecordSet | None:
    """The shipped records of one platform (of one experiment, if given); None when there are none."""
    texts = [(e.name, e.read_bytes()) for e in shipped_record_files(platform)]
    if not texts:
        return None
    rs = parse_texts(texts)
    if experiment is not None and experiment not in rs.experiments:
        return None
    return rs


def shipped_traces_dir(platform: str, kind: str = "traces"):
    """The folder of a platform's shipped traces, ``records/<platform>-<kind>`` (kind "traces": the per-burst
    traces of the microbenchmarks; "fused-traces": the fused MoE kernel's, ``hwkernels.moe_bench --traces``);
    None if absent."""
    entry = resources.files("calibration") / "records" / f"{platform}-{kind}"
    return entry if entry.is_dir() else None
