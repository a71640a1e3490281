"""Per-producer arbitration weights from a per-burst trace of a backpressured aligned burst.

When the X-Stage is full, SMs are not served equally, and the order is repeatable
(docs/hardware.md: per-producer times correlate 0.97 between runs). The DES shares the
drain by ``Platform.producer_weights`` (weighted water-filling); we estimate them from the
trace of an aligned, capacity-limited isolated burst at the largest K: producer p's weight
is the mean issue time over all producers divided by p's own mean issue time (normalised to
mean 1), over every timed burst of every run. The trace is data shipped beside the records
(``calibration/records/<platform>-traces/*.npz``: ``start_us``/``end_us`` [runs, producers, bursts]).
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.records import RecordError
from xsim.fileio import read_bytes

MAX_TRACE_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Weights:
    weights: tuple[float, ...]
    trace: str            # file name
    sha256: str
    issue_spread_us: tuple[float, float, float]  # per-producer mean issue: min, median, max
    run_correlation: float  # of per-producer mean issue between the first two runs


def _meta(path: Path) -> dict:
    with np.load(io.BytesIO(read_bytes(path, "trace", RecordError, MAX_TRACE_BYTES))) as data:
        return json.loads(str(data["meta"]))


def choose_trace(folder: Path, mechanism: str) -> Path | None:
    """The isolated, aligned, remote trace of ``mechanism`` with the most producers, then the largest B."""
    best, key = None, None
    for path in sorted(folder.glob("*.npz")):
        try:
            m = _meta(path)
        except Exception:  # noqa: BLE001  not a trace of ours
            continue
        if (m.get("kind"), m.get("mechanism"), m.get("aligned"), m.get("target")) != ("isolated", mechanism, True, "remote"):
            continue
        k = (int(m["producers"]), int(m["burst_bytes"]), path.name)
        if key is None or k > key:
            best, key = path, k
    return best


def weights_from_trace(path: Path) -> Weights:
    raw = read_bytes(path, "trace", RecordError, MAX_TRACE_BYTES)
    try:
        with np.load(io.BytesIO(raw)) as data:
            meta = json.loads(str(data["meta"]))
            issue = (data["end_us"] - data["start_us"]).astype(float)[:, :, int(meta["warmup_bursts"]):]
    except (OSError, KeyError, ValueError, IndexError, TypeError) as exc:
        raise RecordError(f"trace {path.name}: cannot read it ({exc})") from None
    per_producer = issue.mean(axis=(0, 2))
    if not np.all(per_producer > 0):
        raise RecordError(f"trace {path.name}: a producer has no positive issue time")
    w = per_producer.mean() / per_producer
    w = w / w.mean()
    corr = float(np.corrcoef(issue[0].mean(1), issue[1].mean(1))[0, 1]) if issue.shape[0] > 1 else float("nan")
    spread = (float(per_producer.min()), float(np.median(per_producer)), float(per_producer.max()))
    return Weights(tuple(float(f"{x:.4g}") for x in w), path.name, hashlib.sha256(raw).hexdigest(), spread, corr)


def placements_from_traces(folder: Path, mechanism: str) -> dict[int, tuple[int, ...]]:
    """K -> the SM of CTA 0..K-1, from the traces of ``mechanism`` (aligned isolated first, then by name).

    The CTA -> SM map of a launch depends on K (one CTA per TPC at K = 33 and 66, every SM at
    K = 132) and, for PCIe-host launches, from launch to launch beyond the first 8 CTAs; the
    weights' own trace decides K = 132."""
    out: dict[int, tuple[int, ...]] = {}
    paths = sorted(folder.glob("*.npz"), key=lambda p: (not p.name.startswith("isolated"), p.name))
    for path in paths:
        try:
            with np.load(path) as data:
                meta = json.loads(str(data["meta"]))
                smid = tuple(int(s) for s in data["smid"])
        except Exception:  # noqa: BLE001  not a trace of ours
            continue
        if meta.get("mechanism") == mechanism and meta.get("target") == "remote":
            out.setdefault(int(meta["producers"]), smid)
    return out


def sm_weights_from_trace(path: Path, sms: int) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """The trace's per-producer weights indexed by the SM each producer ran on (SMs the trace
    does not cover weigh 1), and that placement."""
    w = weights_from_trace(path).weights
    with np.load(path) as data:
        smid = tuple(int(s) for s in data["smid"])
    if len(smid) != len(w) or len(set(smid)) != len(smid) or max(smid) >= sms:
        raise RecordError(f"trace {path.name}: its smid does not name one SM < {sms} per producer")
    by_sm = [1.0] * sms
    for s, x in zip(smid, w):
        by_sm[s] = x
    return tuple(by_sm), smid
