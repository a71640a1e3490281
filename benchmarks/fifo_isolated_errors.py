"""Isolated aligned bursts: measured vs the shipped DES (weighted drain) vs the FIFO-drained X-Stage
(xsim.des.fifo_drain, per-CTA credits Q(K)/K, start skew |N(0, 1)| x SKEW us after the barrier).

Only isolated records: each burst meets an empty stage and every CTA issues one tile, which is the
reference's whole scope (it is not wired into the engines, so periodic points cannot be run). The
skew (0.07 us) was chosen on the host weight trace alone (benchmarks/tails_shape_probes.py); nothing
here is fitted. Prints per point and per split (training / held out) the MAPE of mean, p90 and max.

    PYTHONPATH=. python benchmarks/fifo_isolated_errors.py h200-pcie-host [--records FILE --all] [--skew 0.07]
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.fifo_drain_probe import exact_issue_us
from calibration.fidelity import mape_percent
from calibration.records import load_records, load_shipped_records, shipped_traces_dir
from calibration.tails import load_trace_tails
from xsim.platform import resolve_platform
from xsim.report import micro
from xsim.simulate_point import micro_params, simulate_point

KEYS = (("mean", "issue_mean"), ("p90", "issue_p90"), ("max", "issue_max"))


def _des(row, p) -> dict:
    s = simulate_point(micro_params("isolated", row.producers, row.burst_bytes, row.gap_us, row.aligned, 64, 16),
                       p, None, None)
    return {"mean": s["issue_us"]["mean"], "p90": s["issue_us"]["p90"], "max": s["issue_max_us"]["mean"]}


def _fifo(row, p, skew: float) -> dict:
    x = exact_issue_us(p, row.producers, row.burst_bytes, skew)
    return {"mean": float(x.mean()), "p90": float(np.percentile(x, 90)), "max": float(x.max(axis=1).mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("platform")
    ap.add_argument("--records", default=None)
    ap.add_argument("--all", action="store_true", help="hold out every record")
    ap.add_argument("--skew", type=float, default=0.07)
    a = ap.parse_args()
    p = resolve_platform(a.platform)
    rs = load_records([a.records]) if a.records else load_shipped_records(platform=p.name)
    rep = micro.build(rs, p, des=False, trace_tails=load_trace_tails(shipped_traces_dir(p.name)),
                      holdout="all" if a.all else "split")
    rows = sorted((r for r in rep.rows if r.kind == "isolated" and r.aligned),
                  key=lambda r: (r.heldout, r.producers, r.burst_bytes))
    print(f"{p.name} isolated aligned, skew {a.skew} us: measured / DES / FIFO, mean  p90  max (us)")
    out = {False: [], True: []}
    for r in rows:
        m = {k: r.measured.get(f, np.nan) for k, f in KEYS}
        d, f = _des(r, p), _fifo(r, p, a.skew)
        out[r.heldout].append((m, d, f))
        fmt = lambda x: " ".join(f"{x[k]:7.2f}" for k, _ in KEYS)  # noqa: E731
        print(f"  {'held' if r.heldout else 'train'} K={r.producers:3d} B={r.burst_bytes // 1024:4d}K  "
              f"{fmt(m)} | {fmt(d)} | {fmt(f)}", flush=True)
    for held, pts in out.items():
        if not pts:
            continue
        line = []
        for k, _ in KEYS:
            keep = [(m, d, f) for m, d, f in pts if np.isfinite(m[k])]
            if not keep:
                continue
            meas = [m[k] for m, _, _ in keep]
            line.append(f"{k} {mape_percent([d[k] for _, d, _ in keep], meas):6.2f} -> "
                        f"{mape_percent([f[k] for _, _, f in keep], meas):6.2f} (n={len(keep)})")
        print(f"  {'held out' if held else 'training'} ({len(pts)} points) MAPE % DES -> FIFO: " + ", ".join(line))


if __name__ == "__main__":
    main()
