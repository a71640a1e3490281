"""Files in and out: bounded reads of inputs, strict JSON/TOML, atomic writes of outputs.

Every loader reads through :func:`read_bytes` / :func:`read_text`: regular files only (a
special file such as ``/dev/zero`` or a FIFO is refused before it is opened for reading), at
most :data:`MAX_INPUT_BYTES`, UTF-8 checked. :func:`parse_json` and :func:`parse_toml` refuse
``NaN`` and infinities. Every writer writes through :func:`atomic_write` or
:func:`atomic_path`: a temporary file in the target's folder, fsync, rename, so a failure at
any point leaves the old file as it was; missing folders are created; a file this process
read as an input is never written over. Problems are one-line errors (the loader's own
class for reads, :class:`OutputError` for writes).
"""

from __future__ import annotations

import errno
import json
import zlib
import math
import os
import stat
import tempfile
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

MAX_INPUT_BYTES = 64 * 2**20   # the largest input file (scenario, profile, records) read


class OutputError(ValueError):
    """An output that cannot be written (one line: which file and why)."""


class NonFiniteError(ValueError):
    """A NaN or infinite number in a JSON or TOML input."""


# Inputs this process has read: (device, inode) -> (mtime_ns, name). Reset per command.
_INPUTS: dict[tuple[int, int], tuple[int, str]] = {}


def forget_inputs() -> None:
    """Start a new command: no file counts as an input any more."""
    _INPUTS.clear()


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on device"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied" if exc.errno != errno.EROFS else "read-only file system"
    return (exc.strerror or str(exc)).lower()


def read_bytes(path: str | Path, what: str, error: type[Exception] = ValueError,
               limit: int = MAX_INPUT_BYTES, register: bool = True) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; anything else is ``error``."""
    path = Path(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # never open a device or a FIFO
            kind = "it is a folder" if path.is_dir() else "not a regular file"
            raise error(f"cannot read {what} {path}: {kind}")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {_reason(exc)}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if stat.S_ISDIR(st.st_mode):
            raise error(f"cannot read {what} {path}: it is a folder")
        if not stat.S_ISREG(st.st_mode):
            raise error(f"cannot read {what} {path}: not a regular file")
        if st.st_size > limit:
            raise error(f"{what} {path} has {st.st_size} bytes, more than the limit of {limit} ({limit >> 20} MiB)")
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise error(f"cannot read {what} {path}: {_reason(exc)}") from None
    if len(data) > limit:
        raise error(f"{what} {path} has more than the limit of {limit} bytes ({limit >> 20} MiB)")
    if register:
        _INPUTS[(st.st_dev, st.st_ino)] = (st.st_mtime_ns, str(path))
    return data


GZIP_MAGIC = b"\x1f\x8b"


def gunzipped(data: bytes, what: str, error: type[Exception] = ValueError, limit: int = MAX_INPUT_BYTES) -> bytes:
    """``data`` itself, or, where it is gzip (its magic bytes; no text input starts with them), its
    content: at most ``limit`` bytes, one gzip member, anything broken is ``error``."""
    if not data.startswith(GZIP_MAGIC):
        return data
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflate.decompress(data, limit + 1)
    except zlib.error as exc:
        raise error(f"{what}: broken gzip data ({exc})") from None
    if len(out) > limit:
        raise error(f"{what} holds more than the limit of {limit} bytes ({limit >> 20} MiB) once unpacked")
    if not inflate.eof:
        raise error(f"{what}: truncated gzip data")
    if inflate.unused_data:
        raise error(f"{what}: more than one gzip member")
    return out


def decode(data: bytes, what: str, error: type[Exception] = ValueError) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} is not UTF-8 text (byte {exc.start})") from None


def read_text(path: str | Path, what: str, error: type[Exception] = ValueError,
              limit: int = MAX_INPUT_BYTES) -> str:
    """:func:`read_bytes` decoded as UTF-8."""
    return decode(read_bytes(path, what, error, limit), f"{what} {path}", error)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NonFiniteError(f"the number {text} is not finite (NaN and infinities are not allowed)")
    return value


def _no_constant(name: str) -> Any:
    raise NonFiniteError(f"the number {name} is not finite (NaN and infinities are not allowed)")


def parse_json(text: str) -> Any:
    """``json.loads`` that refuses NaN, Infinity and numbers too large for a float."""
    return json.loads(text, parse_float=_finite, parse_constant=_no_constant)


def parse_toml(text: str) -> dict:
    """``tomllib.loads`` that refuses nan and inf."""
    return tomllib.loads(text, parse_float=_finite)


# ---- writing -------------------------------------------------------------------------------------

def _is_input(path: Path) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    seen = _INPUTS.get((st.st_dev, st.st_ino))
    return seen[1] if seen is not None and seen[0] == st.st_mtime_ns else None


def refuse_inputs(path: str | Path, what: str) -> None:
    """An :class:`OutputError` if ``path`` is (a link to) a file read as an input."""
    source = _is_input(Path(path))
    if source is not None:
        raise OutputError(f"refusing to write {what} {path}: it is the input {source}")


def ensure_folder(folder: str | Path, what: str) -> Path:
    """``folder``, created with its parents if missing; a one-line OutputError otherwise."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in [folder, *folder.parents] if p.exists() and not p.is_dir()), folder)
        raise OutputError(f"cannot write {what}: {blocker} is a file, not a folder") from None
    except OSError as exc:
        raise OutputError(f"cannot create the folder {folder} for {what}: {_reason(exc)}") from None
    return folder


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_output(path: str | Path, what: str) -> Path:
    """Check early that ``path`` can be written: not an input, not a folder, its folder made."""
    path = Path(path)
    refuse_inputs(path, what)
    folder = ensure_folder(path.parent, f"{what} {path}")
    if path.is_dir():
        raise OutputError(f"cannot write {what} {path}: it is a folder")
    return folder


@contextmanager
def atomic_path(path: str | Path, what: str = "output") -> Iterator[Path]:
    """A temporary path beside ``path`` to write; renamed over ``path`` when the block succeeds.

    On any failure (an exception in the block, a full disk, an interrupt) the temporary file
    is removed and ``path`` is left exactly as it was. OSErrors become one-line OutputErrors.
    """
    path = Path(path)
    folder = check_output(path, what)
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
        os.close(fd)
    except OSError as exc:
        raise OutputError(f"cannot write {what} {path}: {_reason(exc)}") from None
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
        _fsync_folder(folder)
    except OSError as exc:
        raise OutputError(f"cannot write {what} {path}: {_reason(exc)}") from None
    finally:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass


def atomic_write(path: str | Path, data: bytes | str, what: str = "output") -> None:
    """Replace ``path`` with ``data`` (str is written as UTF-8) atomically."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path, what) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(raw)
