"""A sweep's rows on disk: one folder, one configuration, rows only ever appended.

The folder holds ``sweep.json`` (the sweep's identity: scenario, every fixed value, the swept
keys, the platform and the sha256 of its profile, the engine and the code's version),
``rows.jsonl`` (the record: one JSON line per finished point) and ``rows.csv`` (the same rows
as a table). A resume is refused unless its identity equals the stored one.

A row is one ``os.write`` of a whole line to each file (O_APPEND), JSONL first, with SIGINT
and SIGTERM held back until both lines are written: an interrupt at any instant loses no
finished row and tears no line. After a crash (power loss, SIGKILL, a full disk) opening the
store again cuts an unfinished last line and appends to rows.csv the rows that rows.jsonl
has and it lacks, so both files hold the same rows, in the same order, each once.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from xsim.fileio import OutputError, atomic_write, ensure_folder, parse_json, read_bytes
from xsim.params import ParamError

MANIFEST, ROWS_JSONL, ROWS_CSV = "sweep.json", "rows.jsonl", "rows.csv"
SCHEMA = "xstage.sweep/1"
MAX_ROWS_BYTES = 1 << 30   # rows.jsonl/rows.csv read back on resume (20 000 rows are ~20 MB)
# Modules whose code decides a row's numbers: a change to any of them is a new code version.
CODE_MODULES = ("des", "builders", "closedform", "workload.py", "platform.py", "params.py", "units.py",
                "stats.py", "scenario.py", "sweep.py")


def code_version() -> dict:
    """xsim's version and the sha256 of the code that computes a row."""
    import xsim

    root = Path(xsim.__file__).parent
    digest = hashlib.sha256()
    for name in CODE_MODULES:
        target = root / name
        for path in sorted(target.rglob("*.py")) if target.is_dir() else [target]:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return {"version": xsim.__version__, "sha256": digest.hexdigest()}


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    return None if isinstance(value, float) and not math.isfinite(value) else value


def identity(scenario, platform, swept: list[str], engine: str) -> dict:
    """Everything that decides the rows of a sweep, as JSON data."""
    profile = json.dumps(platform.to_dict(), sort_keys=True, default=str).encode()
    fixed = {k: _plain(v) for k, v in sorted(scenario.params.items()) if k not in swept}
    return json.loads(json.dumps({
        "schema": SCHEMA, "scenario": scenario.name, "builder": scenario.builder, "fixed": fixed,
        "swept": sorted(swept), "platform": platform.name,
        "platform_sha256": hashlib.sha256(profile).hexdigest(), "engine": engine, "code": code_version()}))


def _difference(old: Mapping, new: Mapping) -> str | None:
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            inner = _difference(a, b)
            return f"{key} {inner}" if inner else key
        return f"{key}: {json.dumps(a)} then, {json.dumps(b)} now"
    return None


@contextmanager
def held_signals() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is done (then they act as usual)."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _write_all(fd: int, data: bytes, name: str) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        from xsim.fileio import _reason
        raise OutputError(f"cannot append a row to {name}: {_reason(exc)}") from None


def _whole_lines(path: Path) -> bytes:
    """The file's bytes up to its last newline; an unfinished last line is cut from the file."""
    if not path.exists():
        return b""
    data = read_bytes(path, "sweep rows", OutputError, limit=MAX_ROWS_BYTES, register=False)
    end = data.rfind(b"\n") + 1
    if end != len(data):
        os.truncate(path, end)  # a line cut short by a crash: never a finished row
    return data[:end]


class RowStore:
    """The rows of one sweep in ``folder``; ``open`` checks the identity, ``append`` adds a row."""

    def __init__(self, folder: Path, ident: dict, resume: bool):
        self.folder = ensure_folder(folder, f"the sweep's --out folder {folder}")
        self._check_identity(ident, resume)
        rows = self._read_jsonl()
        self.columns = self._repair_csv(rows)
        self.points: list[str] = [r["point"] for r in rows]  # the rows themselves stay on disk
        del rows
        self._fds: list[int] = []  # opened with the first row

    # ---- opening ---------------------------------------------------------------------------------
    def _check_identity(self, ident: dict, resume: bool) -> None:
        manifest = self.folder / MANIFEST
        held = [n for n in (MANIFEST, ROWS_JSONL, ROWS_CSV) if (self.folder / n).exists()]
        if held and not resume:
            raise ParamError(f"{self.folder} already holds a sweep ({held[0]}); pass --resume to continue it "
                             "or choose another --out")
        self._manifest = None
        if not manifest.exists():
            if held:
                raise ParamError(f"--resume: {self.folder} holds rows but no {MANIFEST} to say which sweep they "
                                 "belong to; choose another --out")
            self._manifest = json.dumps(ident, indent=2) + "\n"  # written with the first row
            return
        try:
            stored = parse_json(read_bytes(manifest, "sweep configuration", ParamError, register=False).decode())
        except ValueError as exc:
            raise ParamError(f"--resume: {manifest} cannot be read ({exc})") from None
        diff = _difference(stored, ident) if isinstance(stored, Mapping) else "the whole file"
        if diff is not None:
            raise ParamError(f"--resume: {self.folder} holds a sweep of another configuration ({diff}); "
                             "choose another --out")

    def _read_jsonl(self) -> list[dict]:
        rows = []
        for number, line in enumerate(_whole_lines(self.folder / ROWS_JSONL).splitlines(), start=1):
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if not isinstance(row, dict) or "point" not in row:
                raise ParamError(f"--resume: {self.folder / ROWS_JSONL} line {number} is not a row; "
                                 "choose another --out")
            rows.append(row)
        return rows

    def _repair_csv(self, rows: list[dict]) -> list[str] | None:
        """rows.csv made to hold exactly the rows of rows.jsonl (it can only lack a last few)."""
        text = _whole_lines(self.folder / ROWS_CSV).decode("utf-8", errors="replace")
        table = list(csv.reader(io.StringIO(text)))
        columns = table[0] if table else (list(rows[0]) if rows else None)
        have = [r[columns.index("point")] if "point" in columns and len(r) == len(columns) else None
                for r in table[1:]] if columns else []
        want = [r["point"] for r in rows]
        if have != want[:len(have)]:
            raise ParamError(f"--resume: {self.folder / ROWS_CSV} does not hold the rows of {ROWS_JSONL}; "
                             "choose another --out")
        missing = rows[len(have):]
        if missing:
            with open(self.folder / ROWS_CSV, "a", newline="") as fh:
                if not table:
                    fh.write(self._csv_line(columns, {c: c for c in columns}))
                for row in missing:
                    fh.write(self._csv_line(columns, row))
                fh.flush()
                os.fsync(fh.fileno())
        return columns

    @staticmethod
    def _csv_line(columns: list[str], row: Mapping) -> str:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow([_csv_value(row.get(c)) for c in columns])
        return buffer.getvalue()

    # ---- use ---------------------------------------------------------------------------------------
    @property
    def finished(self) -> set[str]:
        return set(self.points)

    def append(self, row: Mapping) -> None:
        """One finished row into both files (an interrupt waits until both lines are written)."""
        row = {k: _plain(v) for k, v in row.items()}
        head = ""
        if self.columns is None:
            self.columns = list(row)
            head = self._csv_line(self.columns, {c: c for c in self.columns})
        line = (json.dumps(row, allow_nan=False) + "\n").encode()
        table = (head + self._csv_line(self.columns, row)).encode()
        if self._manifest is not None:  # a sweep that never finished a row leaves no files
            atomic_write(self.folder / MANIFEST, self._manifest, "sweep configuration")
            self._manifest = None
        if not self._fds:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
            try:
                self._fds = [os.open(self.folder / name, flags, 0o644) for name in (ROWS_JSONL, ROWS_CSV)]
            except OSError as exc:
                from xsim.fileio import _reason
                raise OutputError(f"cannot append rows in {self.folder}: {_reason(exc)}") from None
        with held_signals():
            _write_all(self._fds[0], line, str(self.folder / ROWS_JSONL))
            _write_all(self._fds[1], table, str(self.folder / ROWS_CSV))
        self.points.append(row["point"])

    def close(self) -> None:
        for fd in self._fds:
            try:
                os.fsync(fd)
            except OSError:
                pass
            os.close(fd)
        self._fds = []


def _csv_value(value: Any) -> Any:
    return "" if value is None else value
