"""Which records a fit uses, and the deterministic train/held-out split.

A fit is for one store mechanism (default ``st.v4``) and one thread count per producer (the
most common one for that mechanism): remote ``periodic`` and ``isolated`` micro records. Records
the runner flagged (``flags``: e.g. ``drain_above_copy_engine``) are never fitted.

Held out (never seen by the fit, used to report prediction error):
- every record of one producer count K: the second largest K in the sweep;
- every third point of each gap sweep (the points at positions 1, 4, 7, ... of a sweep sorted
  by gap, the zero-gap point excluded), where a sweep is one (K, B, aligned) series with
  more than two nonzero gaps.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from calibration.records import Record, RecordError, RecordSet

DEFAULT_MECHANISM = "st.v4"
FIT_KINDS = ("periodic", "isolated")
GAP_HOLDOUT_EVERY = 3


def mechanisms(rs: RecordSet) -> list[str]:
    """Store mechanisms with remote periodic or isolated records."""
    return sorted({r.params["mechanism"] for r in rs.select("micro") if _is_store(r)})


def _is_store(r: Record) -> bool:
    """A remote periodic/isolated record of the paper's unidirectional pair, with in-kernel issue
    times, that the runner did not flag (a drain faster than the copy engine: not the link)."""
    return (r.kind in FIT_KINDS and r.params.get("target", "remote") == "remote"
            and r.params.get("pattern", "pair") == "pair" and "issue_us" in r.data["stats"]
            and not r.data.get("flags"))


def choose_mechanism(rs: RecordSet, requested: str | None) -> str:
    found = mechanisms(rs)
    if not found:
        raise RecordError("no remote periodic or isolated micro records (pair pattern, with in-kernel issue times)")
    if requested is not None:
        if requested not in found:
            raise RecordError(f"no records for mechanism {requested!r}; found: {', '.join(found)}")
        return requested
    return DEFAULT_MECHANISM if DEFAULT_MECHANISM in found else found[0]


def store_records(rs: RecordSet, mechanism: str, threads: int | None = None) -> list[Record]:
    """Remote periodic + isolated records of one mechanism and thread count (default: most common)."""
    mine = [r for r in rs.select("micro") if _is_store(r) and r.params["mechanism"] == mechanism]
    if threads is None:
        counts = Counter(r.params.get("threads") for r in mine)
        threads = max(counts, key=lambda t: (counts[t], t if t is not None else -1))
    return [r for r in mine if r.params.get("threads") == threads]


def heldout_producers(records: list[Record]) -> int | None:
    """The producer count held out: the second largest K (None with fewer than three Ks)."""
    ks = sorted({int(r.params["producers"]) for r in records})
    return ks[-2] if len(ks) >= 3 else None


def _sweep_key(r: Record) -> tuple:
    p = r.params
    return (int(p["producers"]), int(p["burst_bytes"]), bool(p["aligned"]))


def heldout_gap_points(records: list[Record]) -> set[str]:
    """``where`` of every third nonzero-gap point of each periodic gap sweep."""
    sweeps: dict[tuple, list[Record]] = defaultdict(list)
    for r in records:
        if r.kind == "periodic" and float(r.params["gap_us"]) > 0:
            sweeps[_sweep_key(r)].append(r)
    out = set()
    for key in sorted(sweeps):
        sweep = sorted(sweeps[key], key=lambda r: (float(r.params["gap_us"]), r.where))
        if len(sweep) <= 2:
            continue
        out.update(r.where for i, r in enumerate(sweep) if i % GAP_HOLDOUT_EVERY == 1)
    return out


@dataclass(frozen=True)
class Split:
    train: tuple[Record, ...]
    heldout: tuple[Record, ...]
    heldout_producers: int | None

    def describe(self) -> str:
        k = f"K = {self.heldout_producers}" if self.heldout_producers is not None else "no K"
        return (f"held out: every record of {k}, and every {GAP_HOLDOUT_EVERY}rd nonzero-gap point "
                f"(positions 1, 4, 7, ...) of each (K, B, aligned) gap sweep")


def split(records: list[Record]) -> Split:
    k_out = heldout_producers(records)
    gap_out = heldout_gap_points(records)
    train, held = [], []
    for r in records:
        out = (k_out is not None and int(r.params["producers"]) == k_out) or r.where in gap_out
        (held if out else train).append(r)
    return Split(tuple(train), tuple(held), k_out)
