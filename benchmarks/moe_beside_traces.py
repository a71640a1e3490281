"""Tile by tile, from ``hwkernels.moe_beside --traces``: is a mainloop stretched over the host link by how long
the link was busy while it ran?

A traced point holds one stamped run over the host link and one into device memory, of the same table, so
tile i of one is tile i of the other. For the host run the link is rebuilt from the stamps alone: each L2
tile's Combine bytes enter the X-Stage evenly over its store span (stamps 3 to 4) and drain at the profile's
rate R whenever any are queued (a fluid queue on a 100 ns grid). For every tile its mainloop (stamps 1 to 2)
gets the share of that time the link was draining ("busy"), and its stretch, host mainloop over local.

Reads beside host stores (``hwkernels.read_beside``, docs/moe.md) found the rate of L2-served reads at
1 - 0.75 rho of the local control's at a mean link load rho, with 33-66 storing SMs. If the MoE mainloops
pay the same way, local / host = 1 - a x busy per tile, with a near 0.75 where the tile's reads are
L2-served. Printed per point and kind: tiles binned by their busy share, the mean stretch in each bin, and
a (least squares through the origin of 1 - local / host on busy). Nothing is fitted to a prediction.

    PYTHONPATH=. python benchmarks/moe_beside_traces.py [--platform NAME] [--name STEM] TRACES.npz ...
writes benchmarks/results/<STEM>_<platform>.txt (STEM: moe_beside_traces). The fused kernel's own traces
(``hwkernels.moe_bench --traces``, a host file and a local one) pair the same way, point = config|schedule.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from xsim.fileio import atomic_write  # noqa: E402
from xsim.moe.traces import DT_NS, link_queue, merged  # noqa: E402
from xsim.platform import ProfileError, resolve_platform  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0001)
KINDS = ((0, "L1"), (1, "L2"))


def link_busy(stamps: np.ndarray, store_bytes: np.ndarray, rate_gbps: float, dt_ns: float = DT_NS,
              above: float | None = None):
    """(busy, t0): per dt_ns bin from t0, the share of the bin the fluid X-Stage spent draining at R; with
    ``above`` (bytes), instead 1 where the bytes it holds at the bin's end exceed ``above``, else 0."""
    held, drained, t0 = link_queue(stamps, store_bytes, rate_gbps, dt_ns)
    busy = drained / (rate_gbps * dt_ns) if above is None else (held > above).astype(float)
    return busy, t0


def busy_share(busy: np.ndarray, t0: float, start: np.ndarray, end: np.ndarray, dt_ns: float = DT_NS):
    """Each [start, end) interval's mean busy share, in whole bins (past the grid the link is idle)."""
    n = len(busy)
    csum = np.concatenate([[0.0], np.cumsum(busy)])
    lo = np.maximum(((start - t0) / dt_ns).astype(int), 0)
    hi = np.maximum(np.ceil((end - t0) / dt_ns).astype(int), lo + 1)
    return (csum[np.minimum(hi, n)] - csum[np.minimum(lo, n)]) / (hi - lo)


def point_rows(host: np.ndarray, local: np.ndarray, tiles: np.ndarray, store_bytes: np.ndarray, rate: float,
               above: float | None = None):
    """Per kind: (busy share, local / host mainloop) of every tile with a mainloop in both runs (``above``:
    the share of its mainloop with more than that many bytes in the X-Stage, :func:`link_busy`)."""
    busy, t0 = link_busy(host, store_bytes, rate, above=above)
    share = busy_share(busy, t0, host[:, 1].astype(float), host[:, 2].astype(float))
    ml_h, ml_l = (host[:, 2] - host[:, 1]).astype(float), (local[:, 2] - local[:, 1]).astype(float)
    ok = (ml_h > 0) & (ml_l > 0)
    return {name: (share[ok & (tiles[:, 0] == k)], (ml_l / np.where(ml_h > 0, ml_h, 1.0))[ok & (tiles[:, 0] == k)])
            for k, name in KINDS}


def slope(share: np.ndarray, speed: np.ndarray) -> float:
    """a of local / host = 1 - a x busy, least squares through the origin (NaN without busy time)."""
    den = float(np.sum(share * share))
    return float(np.sum(share * (1.0 - speed)) / den) if den > 0 else float("nan")


def paired(npz: dict, rate: float, above: float | None = None):
    """(point, :func:`point_rows`) for every point with both a host and a local run, in name order."""
    for host in sorted(k.removesuffix("|stamps") for k in npz if k.endswith("|host|stamps")):
        point = host.removesuffix("|host")
        if f"{point}|local|stamps" in npz:
            yield point, point_rows(npz[f"{point}|host|stamps"], npz[f"{point}|local|stamps"], npz[f"{point}|tiles"],
                                    npz[f"{point}|store_bytes"], rate, above)


def report(npz: dict, rate: float, above: float | None = None) -> list[str]:
    lines = []
    for point, rows in paired(npz, rate, above):
        for name, (share, speed) in rows.items():
            if not len(share):
                continue
            cells = []
            for lo, hi in zip(BINS[:-1], BINS[1:]):
                sel = (share >= lo) & (share < hi)
                cells.append(f"{1 / np.mean(speed[sel]):.2f} ({int(sel.sum())})" if sel.any() else "-")
            lines.append(f"| {point.replace('|', ' ')} | {name} | {np.mean(share):.2f} | " + " | ".join(cells)
                         + f" | {slope(share, speed):.2f} |")
    return lines


def never_above(npz: dict, rate: float, gate: float, least: int = 20) -> list[str]:
    """Per point: host / local mainloop of the tiles whose mainloop never saw the rebuilt stage above ``gate`` (at
    least ``least`` of a kind), then per kind the median and range over the points: the link's cost with the gate
    out of the way."""
    lines, per_kind = [], {name: [] for _, name in KINDS}
    for point, rows in paired(npz, rate, gate):
        cells = []
        for name, (share, speed) in rows.items():
            sel = share == 0
            if sel.sum() >= least:
                per_kind[name].append(1 / np.mean(speed[sel]))
                cells.append(f"{per_kind[name][-1]:.3f} ({int(sel.sum())})")
            else:
                cells.append("-")
        lines.append(f"| {point.replace('|', ' ')} | " + " | ".join(cells) + " |")
    summary = [f"{name}: median {np.median(v):.3f}, range {min(v):.3f}-{max(v):.3f} over {len(v)} points"
               for name, v in per_kind.items() if v]
    return ["| point | " + " | ".join(f"{name} host / local (tiles)" for _, name in KINDS) + " |",
            "| --- | " + " | ".join("---:" for _ in KINDS) + " |", *lines, "", *summary]


def _table(what: str, body: list[str]) -> list[str]:
    head = " | ".join(f"{what} {lo:.1f}-{min(hi, 1.0):.1f}" for lo, hi in zip(BINS[:-1], BINS[1:]))
    return [f"| point | kind | mean {what} | {head} | a |",
            "| --- | --- | ---: | " + " | ".join("---:" for _ in BINS[1:]) + " | ---: |", *body]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="moe_beside_traces", description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--platform", default="h100-pcie-host")
    ap.add_argument("--name", default="moe_beside_traces",
                    help="the results file's stem (benchmarks/results/<name>_<platform>.txt)")
    args = ap.parse_args(argv)
    if not re.fullmatch(r"[\w.-]+", args.name):
        print(f"moe_beside_traces: --name {args.name!r}: letters, digits, '.', '_' and '-' only", file=sys.stderr)
        return 2
    try:
        platform = resolve_platform(args.platform)
        files = [np.load(p) for p in args.traces]
    except (ProfileError, OSError, ValueError) as e:
        print(f"moe_beside_traces: {e}", file=sys.stderr)
        return 2
    rate, arrays = platform.drain_rate_gbps, merged(files)
    body = report(arrays, rate)
    if not body:
        print(f"moe_beside_traces: no point with both a host and a local run in "
              f"{', '.join(map(str, args.traces))}", file=sys.stderr)
        return 2
    commits = sorted({str(f["commit"]) for f in files if "commit" in f.files})
    text = "\n".join([f"Mainloops against the link's busy share while they ran, {args.platform} (R = {rate:.1f} "
                      f"GB/s; traces of {', '.join(commits)}: {', '.join(p.name for p in args.traces)}); "
                      f"{commit_note()}",
                      "per bin: mean host / local mainloop (tiles); a: local / host = 1 - a x busy", "",
                      *_table("busy", body)])
    gate = platform.load_gate
    if gate is not None and gate.threshold_bytes > 0:
        text += "\n".join(["", "", f"The same tiles against the share of their mainloop with more than the profile's "
                           f"load gate, {gate.threshold_bytes / 1024:.0f} KiB, in the rebuilt X-Stage ({gate.scope} "
                           f"scope); a: local / host = 1 - a x share above", "",
                           *_table("above", report(arrays, rate, gate.threshold_bytes)), "",
                           "Tiles whose mainloop never saw the stage above the gate: mean host / local mainloop (points "
                           "with 20 such tiles of a kind or more)", "",
                           *never_above(arrays, rate, gate.threshold_bytes)])
    text += "\n"
    print(text, end="")
    atomic_write(ROOT / "benchmarks" / "results" / f"{args.name}_{args.platform}.txt", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
