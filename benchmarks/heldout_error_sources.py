"""Where the held-out DES errors come from: each group's share of the period and mean-issue MAPE.

A point's group is (aligned / free-running / isolated, K, B, backpressured or at the floor: measured
mean issue >= 1 us or not). A group's share is the sum of its points' absolute errors over the number
of points of the whole set, so the shares add up to the set's MAPE.

    PYTHONPATH=. python benchmarks/heldout_error_sources.py h200-pcie-host [--records FILE --all]
"""

from __future__ import annotations

import argparse
import collections

import numpy as np

from calibration.records import load_records, load_shipped_records
from xsim.platform import resolve_platform
from xsim.report import micro

FLOOR_US = 1.0


def group(row) -> str:
    mode = "isolated" if row.kind == "isolated" else ("aligned" if row.aligned else "free")
    state = "backpressured" if row.measured["issue_mean"] >= FLOOR_US else "at floor"
    b = "" if row.kind == "isolated" else f" B={row.burst_bytes // 1024}K"
    return f"{mode} K={row.producers}{b} {state}"


def table(rows, by: str = "issue") -> list[str]:
    """The per-group lines, largest share first of ``by`` ("issue" or "period")."""
    def err(pred, meas):
        return abs(pred - meas) / meas * 100 if np.isfinite(pred) and np.isfinite(meas) and meas > 0 else np.nan
    n, periodic = len(rows), [r for r in rows if r.kind == "periodic"]
    issue, period, signed, signed_period, count = (collections.Counter() for _ in range(5))
    for r in rows:
        g, d, m = group(r), r.predicted["des"], r.measured
        e = err(d["issue_us"], m["issue_mean"])
        issue[g] += e
        signed[g] += (d["issue_us"] - m["issue_mean"]) / m["issue_mean"] * 100
        count[g] += 1
        if r.kind == "periodic":
            period[g] += err(d["period_us"], m["period_mean"])
            signed_period[g] += (d["period_us"] - m["period_mean"]) / m["period_mean"] * 100
    out = [f"{n} points ({len(periodic)} periodic): mean-issue MAPE {sum(issue.values()) / n:.2f} %, "
           f"period MAPE {sum(period.values()) / max(len(periodic), 1):.2f} %",
           f"{'group':36s} {'n':>3s} {'mean-issue pts':>14s} {'signed mean %':>13s} {'period pts':>10s} {'signed period %':>15s}"]
    for g, v in sorted(issue.items(), key=lambda x: -(x[1] if by == "issue" else period[x[0]])):
        n_per = sum(r.kind == "periodic" and group(r) == g for r in rows)
        out.append(f"{g:36s} {count[g]:3d} {v / n:14.2f} {signed[g] / count[g]:+13.1f} "
                   f"{period[g] / max(len(periodic), 1):10.2f} "
                   + (f"{signed_period[g] / n_per:+15.1f}" if n_per else f"{'-':>15s}"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("platform")
    ap.add_argument("--records", default=None, help="records file (default: the platform's shipped micro records)")
    ap.add_argument("--all", action="store_true", help="hold out every record (a set no fit has seen)")
    a = ap.parse_args()
    p = resolve_platform(a.platform)
    rs = load_records([a.records]) if a.records else load_shipped_records(platform=p.name)
    rep = micro.build(rs, p, des=True, trace_tails=None, des_for="heldout", des_timeout_s=None,
                      holdout="all" if a.all else "split")
    print("\n".join(table([r for r in rep.rows if r.heldout and "des" in r.predicted])))


if __name__ == "__main__":
    main()
