"""Reads beside host stores (``hwkernels.read_beside`` records): how fast SMs that store nothing read, from
the L2 or from HBM, while other SMs store to host memory, against the same point with the stores into
device memory.

Per footprint, a grid of storers x gap: the readers' rate over the link run beside the local run's (each
the median reader's bytes over its time), and the store rate as a share of the profile's drain rate R
("sat" where the storers asked for more than the link drained: it ran at R, backpressured). Nothing is
fitted here: it is the measurement a law for the link's cost inside running mainloops would be calibrated
on (docs/moe.md, "Reads beside host stores").

    PYTHONPATH=. python benchmarks/read_beside.py [--platform NAME] [RECORDS.jsonl ...]
writes benchmarks/results/read_beside_<platform>.txt; the records default to the platform's shipped
``calibration/records/<platform>-read-beside.jsonl``.
"""

from __future__ import annotations

import math
import sys

import numpy as np
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from moe_beside import _med, parse  # noqa: E402  benchmarks/ is the script's folder
from provenance import commit_note  # noqa: E402

from xsim.fileio import atomic_write  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NAN = math.nan
SATURATED = 0.97        # a host run whose store rate reached this share of R drained at the link's rate


def points(recs: list[dict]) -> dict:
    """{(loads, footprint MB, read gap ns, storers, gap us): {dest: record}} over the checked read-beside
    records (the last of repeats wins; records without a read gap: 0)."""
    out: dict = {}
    for r in recs:
        p = r.get("params") or {}
        if r.get("kind") != "read-beside" or not (r.get("check") or {}).get("ok"):
            continue
        key = (p["loads"], float(p["footprint_mb"]), int(p.get("read_gap_ns", 0)), int(p["storers"]),
               float(p["gap_us"]))
        out.setdefault(key, {})[p["destination"]] = r
    return out


def cells(recs: list[dict], rate_gbps: float) -> list[dict]:
    """One cell per point with both destinations: the host / local reader-rate ratio and the load."""
    out = []
    for (loads, fp, rgap, storers, gap), by in sorted(points(recs).items()):
        if not {"host", "local"} <= set(by):
            continue
        host, local = by["host"], by["local"]
        load = _med(host, "store_gbps") / rate_gbps
        p = local["params"]
        reads = p["footprint_mb"] * 2**20 * p["passes"] / (1 if p["shared"] else p["readers"])   # bytes per reader
        out.append({"loads": loads, "footprint_mb": fp, "read_gap_ns": rgap, "storers": storers, "gap_us": gap,
                    "load": load, "saturated": load >= SATURATED,
                    "reader_gbps_local": reads / _med(local, "reader_us") / 1e3,
                    "ratio": _med(local, "reader_us") / _med(host, "reader_us")})
    return out


MANY = 33   # storers from which the readers' loss is about the same function of the load (the map)


def slope_points(cs: list[dict]) -> list[tuple]:
    """Per (loads, footprint MB, read gap ns, storers >= MANY): (key, the local readers' median rate GB/s,
    cells, a), a the slope of host / local = 1 - a x load by least squares through the origin over the
    unsaturated cells. (The storer count is part of the key: it sets how many readers share the source,
    so their rate.)"""
    out = []
    for key in sorted({(c["loads"], c["footprint_mb"], c["read_gap_ns"], c["storers"]) for c in cs
                       if c["storers"] >= MANY}):
        sel = [c for c in cs if (c["loads"], c["footprint_mb"], c["read_gap_ns"], c["storers"]) == key
               and not c["saturated"]]
        if sel:
            rho = np.array([c["load"] for c in sel])
            loss = 1.0 - np.array([c["ratio"] for c in sel])
            out.append((key, float(np.median([c["reader_gbps_local"] for c in sel])), len(sel),
                        float(rho @ loss / (rho @ rho))))
    return out


def slopes(cs: list[dict]) -> list[str]:
    lines = ["", f"The readers' loss against their own rate: a of host / local = 1 - a x load, over the unsaturated "
             f"cells with >= {MANY} storers", "",
             "| loads | footprint MB | read gap ns | storers | reader GB/s (local) | cells | a |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for (loads, fp, rgap, storers), rate, n, a in slope_points(cs):
        lines.append(f"| {loads} | {fp:g} | {rgap} | {storers} | {rate:.1f} | {n} | {a:.2f} |")
    return lines


def _cell(c: dict) -> str:
    load = "sat" if c["saturated"] else f"{c['load']:.2f}"
    return f"{c['ratio']:.3f} ({load})"


def table(cs: list[dict]) -> list[str]:
    lines = []
    for loads, fp, rgap in sorted({(c["loads"], c["footprint_mb"], c["read_gap_ns"]) for c in cs}):
        mine = [c for c in cs if (c["loads"], c["footprint_mb"], c["read_gap_ns"]) == (loads, fp, rgap)]
        gaps = sorted({c["gap_us"] for c in mine})
        kind = "L2-served, shared by every reader" if fp <= 64 else "one slice per reader, from HBM"
        paced = f", readers paced {rgap} ns a tile" if rgap else ""
        lines += ["", f"{loads} loads, footprint {fp:g} MB ({kind}{paced}): reader rate host / local "
                  "(store load, share of R)",
                  "", "| storers | " + " | ".join(f"gap {g:g} us" for g in gaps) + " |",
                  "| ---: | " + " | ".join("---:" for _ in gaps) + " |"]
        for s in sorted({c["storers"] for c in mine}):
            by_gap = {c["gap_us"]: c for c in mine if c["storers"] == s}
            row = [_cell(by_gap[g]) if g in by_gap else "-" for g in gaps]
            lines.append(f"| {s} | " + " | ".join(row) + " |")
    return lines


def main(argv=None) -> int:
    parsed = parse("read_beside", __doc__, argv, records="read-beside", pairs=points, platform="h100-pcie-host")
    if parsed is None:
        return 2
    args, platform, recs, paths = parsed
    rate = platform.drain_rate_gbps
    commits = sorted({r.get("commit", "?") for r in recs})
    lines = [f"Reads beside host stores on {args.platform} (R = {rate:.1f} GB/s; records of {', '.join(commits)}: "
             f"{', '.join(p.name for p in paths)}); {commit_note()}",
             "storers store 32 KB tiles gap us apart until the readers (every other SM) are done; a cell is the "
             "median reader's rate with host stores over that with local stores, and the host run's store rate / R",
             *table(cs := cells(recs, rate)), *slopes(cs)]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    out = ROOT / "benchmarks" / "results" / f"read_beside_{args.platform}.txt"
    atomic_write(out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
