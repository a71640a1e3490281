"""GEMM tiles beside host stores (``hwkernels.moe_beside`` records): how much longer a mainloop runs while the
link carries a given store rate, against the same table with the Combine into device memory.

Per config and point (own j: every SM stores its L2 tile's Combine, then runs j L1 tiles; beside n: n
programs store, the others run L1 tiles only): the store rate over the host-link run's store window
(bytes / window, and as a share of the profile's drain rate R), each kind's median mainloop over the link
beside the local control's and their ratio, also at one clock (each launch's own mean SM clock: a
compute-bound mainloop scales with 1 / clock, so DVFS is told apart from the link), the kernel times.
Nothing here is fitted: it is the measurement a law for the link's cost inside running mainloops would
be calibrated on (docs/moe.md).

    PYTHONPATH=. python benchmarks/moe_beside.py [--platform NAME] [RECORDS.jsonl ...]
writes benchmarks/results/moe_beside_<platform>.txt; the records default to the platform's shipped
``calibration/records/<platform>-moe-beside.jsonl``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from hwkernels.records import read_records  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402
from xsim.platform import ProfileError, resolve_platform  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NAN = math.nan


def _med(rec: dict, name: str) -> float:
    return float(((rec.get("stats") or {}).get(name) or {}).get("median", NAN))


HINT = "@"   # a point run with a Combine store hint is its config's name + "@" + the hint


def point_name(params: dict) -> str:
    """The config a beside record's point belongs to: its name, or name@hint (KernelConfig.combine_hint)."""
    hint = params.get("combine_hint") or ""
    return params["config"] + (HINT + hint if hint else "")


def points(recs: list[dict]) -> dict:
    """{(config, pattern, k): {dest: record}} over the checked beside records (the last of repeats wins;
    a hinted kernel's points are their own config, ``point_name``)."""
    out: dict = {}
    for r in recs:
        p = r.get("params") or {}
        if r.get("kind") != "beside" or not (r.get("check") or {}).get("ok"):
            continue
        k = p["l1_per_l2"] if p["pattern"] == "own" else p["storers"]
        out.setdefault((point_name(p), p["pattern"], int(k)), {})[p["destination"]] = r
    return out


def rows(recs: list[dict], rate_gbps: float) -> list[dict]:
    """One row per (config, pattern, k) with both destinations: rate, mainloops, ratios."""
    out = []
    for (config, pattern, k), by in sorted(points(recs).items()):
        if not {"host", "local"} <= set(by):
            continue
        host, local = by["host"], by["local"]
        l1 = "l1_mainloop_us" if pattern == "own" else "l1_during_us"
        window = _med(host, "store_window_us")
        gbps = host["params"]["l2_bytes"] / (window * 1e3) if window > 0 else NAN
        row = {"config": config, "pattern": pattern, "k": k, "gbps": gbps, "load": gbps / rate_gbps,
               "kernel_host": _med(host, "kernel_us"), "kernel_local": _med(local, "kernel_us")}
        # each launch's own mean SM clock: a compute-bound mainloop scales with 1 / clock, so the ratio
        # at one clock (host mainloop x host clock / local clock) is what the link costs beyond DVFS
        mhz_h, mhz_l = _med(host, "run_clock_mhz"), _med(local, "run_clock_mhz")
        clock = mhz_h / mhz_l if mhz_l > 0 else NAN
        row |= {"mhz_host": mhz_h, "mhz_local": mhz_l}
        for kind, name in (("l1", l1), ("l2", "l2_mainloop_us")):
            h, lo = _med(host, name), _med(local, name)
            ratio = h / lo if lo > 0 else NAN
            row |= {f"{kind}_host": h, f"{kind}_local": lo, f"{kind}_ratio": ratio,
                    f"{kind}_ratio_at_clock": ratio * clock}
        out.append(row)
    return out


def table(rs: list[dict]) -> list[str]:
    lines = ["| config | pattern | k | GB/s in window | load | L1 us host / local | ratio (at one clock) | "
             "L2 us host / local | ratio (at one clock) | MHz host / local | kernel us host / local |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rs:
        lines.append(f"| {r['config']} | {r['pattern']} | {r['k']} | {r['gbps']:.1f} | {r['load']:.2f} | "
                     f"{r['l1_host']:.2f} / {r['l1_local']:.2f} | {r['l1_ratio']:.3f} ({r['l1_ratio_at_clock']:.3f}) | "
                     f"{r['l2_host']:.2f} / {r['l2_local']:.2f} | {r['l2_ratio']:.3f} ({r['l2_ratio_at_clock']:.3f}) | "
                     f"{r['mhz_host']:.0f} / {r['mhz_local']:.0f} | "
                     f"{r['kernel_host']:.0f} / {r['kernel_local']:.0f} |")
    return lines


def parse(prog: str, doc: str, argv=None, extra=None, records="moe-beside", pairs=None,
          platform="h200-pcie-host"):
    """(args, platform, records, paths) of a beside script's command line, or None after one line on
    stderr (a missing file, an unknown platform, no usable records). ``extra`` adds arguments; ``records``
    names the default file (``<platform>-<records>.jsonl``), ``pairs`` groups the records into points
    ({key: {dest: record}}; default this module's ``points``), at least one with both destinations."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    ap.add_argument("records", nargs="*", type=Path)
    ap.add_argument("--platform", default=platform)
    if extra:
        extra(ap)
    args = ap.parse_args(argv)
    paths = args.records or [ROOT / "calibration" / "records" / f"{args.platform}-{records}.jsonl"]
    try:
        resolved = resolve_platform(args.platform)
        recs = [r for p in paths for r in read_records(p)]
    except (ProfileError, OSError, ValueError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return None
    if not any({"host", "local"} <= set(by) for by in (pairs or points)(recs).values()):
        print(f"{prog}: no checked {records} records with both destinations in {', '.join(map(str, paths))}",
              file=sys.stderr)
        return None
    return args, resolved, recs, paths


def main(argv=None) -> int:
    parsed = parse("moe_beside", __doc__, argv)
    if parsed is None:
        return 2
    args, platform, recs, paths = parsed
    rate = platform.drain_rate_gbps
    rs = rows(recs, rate)
    commits = sorted({r.get("commit", "?") for r in recs})
    lines = [f"GEMM tiles beside host stores on {args.platform} (R = {rate:.1f} GB/s; records of "
             f"{', '.join(commits)}: {', '.join(p.name for p in paths)}); {commit_note()}",
             "own k: every SM stores its L2 tile, then runs k L1 tiles; beside k: k programs store, the rest run "
             "L1 only (their L1 mainloops inside the store window)", "", *table(rs)]
    out = ROOT / "benchmarks" / "results" / f"moe_beside_{args.platform}.txt"
    atomic_write(out, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
