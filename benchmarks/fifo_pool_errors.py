"""Isolated aligned bursts: measured vs the shipped DES (weighted drain) vs the pure FIFO (xsim.des.fifo_drain)
vs the FIFO with a shared credit pool and weighted credit return (xsim.des.fifo_pool).

The pool is Q(K), the per-CTA limit alpha Q(K)/K, the weights the profile's static SM weights
(``Platform.weights_for``, no per-burst spread), the start skew |N(0, 1)| x SKEW us after the barrier
(0.07, as benchmarks/fifo_isolated_errors.py; not fitted here). alpha is the one parameter: ``--fit``
picks it on the TRAINING points of the records given (grid ``--alphas``, objective the mean of the
training mean-issue and p90-issue MAPE); ``--alpha A`` evaluates a fitted value on any record set.

    PYTHONPATH=. python benchmarks/fifo_pool_errors.py h200-pcie-host --fit
    PYTHONPATH=. python benchmarks/fifo_pool_errors.py h200-pcie-host --alpha A [--records FILE --all]
        [--set NAME=FILE[,all] ...]   (more record sets, one table each, sharing the simulated points)
"""

from __future__ import annotations

import argparse
from functools import lru_cache

import numpy as np

from benchmarks.fifo_drain_probe import exact_issue_us
from benchmarks.fifo_isolated_errors import KEYS, _des
from calibration.fidelity import mape_percent
from calibration.records import load_records, load_shipped_records, shipped_traces_dir
from calibration.tails import load_trace_tails
from xsim.des import fifo_pool
from xsim.platform import resolve_platform
from xsim.report import micro
from xsim.units import gbps_to_bytes_per_us

GRID = (1.0, 1.1, 1.2, 1.35, 1.5, 2.0, 3.0, 1e9)


def pool_issue_us(p, k: int, b: float, alpha: float, skew_us: float, bursts: int = 16, seed: int = 1) -> np.ndarray:
    """[bursts, K] issue times (us from each CTA's start): the probe's start skews (seeded as
    exact_issue_us), pool Q(K), limit min(alpha, K) Q(K)/K, static SM weights."""
    rng = np.random.default_rng(seed)
    drain, pool = gbps_to_bytes_per_us(p.drain_rate_gbps), p.capacity_bytes(k)
    limit = np.full(k, min(alpha, k) * pool / k)
    rate, w = b / p.t_iss0_us(k, b), np.asarray(p.weights_for(k), float)
    out = np.empty((bursts, k))
    for j in range(bursts):
        start = skew_us * np.abs(rng.standard_normal(k))
        r = fifo_pool.simulate(start, np.full(k, b), np.full(k, rate), w, limit, pool, drain)
        out[j] = r.issue_end_us - start
    return out


def _summary(x: np.ndarray) -> dict:
    return {"mean": float(x.mean()), "p90": float(np.percentile(x, 90)), "max": float(x.max(axis=1).mean())}


def _rows(p, records, all_held):
    rs = load_records([records]) if records else load_shipped_records(platform=p.name)
    rep = micro.build(rs, p, des=False, trace_tails=load_trace_tails(shipped_traces_dir(p.name)),
                      holdout="all" if all_held else "split")
    return sorted((r for r in rep.rows if r.kind == "isolated" and r.aligned),
                  key=lambda r: (r.heldout, r.producers, r.burst_bytes))


def _mapes(pts, which) -> dict:
    """{key: (MAPE %, n)} of prediction ``which`` over the points with a finite measured value."""
    out = {}
    for k, _ in KEYS:
        keep = [pt for pt in pts if np.isfinite(pt["meas"][k])]
        if keep:
            out[k] = (mape_percent([pt[which][k] for pt in keep], [pt["meas"][k] for pt in keep]), len(keep))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("platform")
    ap.add_argument("--records", default=None)
    ap.add_argument("--all", action="store_true", help="hold out every record")
    ap.add_argument("--skew", type=float, default=0.07)
    ap.add_argument("--fit", action="store_true", help="fit alpha on the training points")
    ap.add_argument("--alpha", type=float, default=None)
    ap.add_argument("--alphas", type=float, nargs="*", default=GRID)
    ap.add_argument("--name", default="", help="a title for the first record set")
    ap.add_argument("--set", action="append", default=[], help="NAME=FILE[,all]: another record set to evaluate")
    ap.add_argument("--bursts", type=int, default=16, help="bursts per point of the pool reference")
    a = ap.parse_args()
    if a.fit == (a.alpha is not None):
        ap.error("give exactly one of --fit, --alpha")
    p = resolve_platform(a.platform)
    fifo = lru_cache(None)(lambda k, b: _summary(exact_issue_us(p, k, b, a.skew)))
    pool = lru_cache(None)(lambda k, b, al: _summary(pool_issue_us(p, k, b, al, a.skew, a.bursts)))
    if a.fit:
        train = [r for r in _rows(p, a.records, a.all) if not r.heldout]
        meas = [{k: r.measured.get(f, np.nan) for k, f in KEYS} for r in train]
        print(f"{p.name}: alpha fitted on {len(train)} training isolated aligned points, {a.bursts} bursts each "
              f"(objective: (mean MAPE + p90 MAPE) / 2)")
        best = None
        for al in a.alphas:
            pts = [{"meas": m, "pool": pool(r.producers, r.burst_bytes, al)} for r, m in zip(train, meas)]
            e = _mapes(pts, "pool")
            obj = 0.5 * (e["mean"][0] + e["p90"][0])
            print(f"  alpha {al:8.3g}: mean {e['mean'][0]:6.2f}  p90 {e['p90'][0]:6.2f}  "
                  f"max {e['max'][0] if 'max' in e else float('nan'):6.2f} (n={e.get('max', (0, 0))[1]})  "
                  f"objective {obj:6.2f}", flush=True)
            best = min(best or (obj, al), (obj, al))
        print(f"  fitted alpha = {best[1]:g} (objective {best[0]:.2f})")
        return
    sets = [(a.name, a.records, a.all)] + [_set(x) for x in a.set]
    for name, records, all_held in sets:
        if name:
            print(f"== {name}")
        _evaluate(p, _rows(p, records, all_held), a, fifo, pool)


def _set(spec: str):
    """NAME=FILE or NAME=FILE,all (every record held out)."""
    name, _, rest = spec.partition("=")
    path, _, flag = rest.partition(",")
    return name, path, flag == "all"


def _evaluate(p, rows, a, fifo, pool) -> None:
    print(f"{p.name} isolated aligned, skew {a.skew} us, alpha {a.alpha:g}, {a.bursts} pool bursts: "
          f"measured / DES / FIFO / pool, mean  p90  max (us)")
    out = {False: [], True: []}
    fmt = lambda x: " ".join(f"{x[k]:7.2f}" for k, _ in KEYS)  # noqa: E731
    for r in rows:
        pt = {"meas": {k: r.measured.get(f, np.nan) for k, f in KEYS}, "des": _des(r, p),
              "fifo": fifo(r.producers, r.burst_bytes), "pool": pool(r.producers, r.burst_bytes, a.alpha)}
        out[r.heldout].append(pt)
        print(f"  {'held' if r.heldout else 'train'} K={r.producers:3d} B={r.burst_bytes // 1024:4d}K  "
              f"{fmt(pt['meas'])} | {fmt(pt['des'])} | {fmt(pt['fifo'])} | {fmt(pt['pool'])}", flush=True)
    for held, pts in out.items():
        if not pts:
            continue
        e = {w: _mapes(pts, w) for w in ("des", "fifo", "pool")}
        line = ", ".join(f"{k} {e['des'][k][0]:6.2f} -> {e['fifo'][k][0]:6.2f} -> {e['pool'][k][0]:6.2f} "
                         f"(n={e['des'][k][1]})" for k in e["des"])
        print(f"  {'held out' if held else 'training'} ({len(pts)} points) MAPE % DES -> FIFO -> pool: " + line)


if __name__ == "__main__":
    main()
