"""Isolated aligned bursts on the FIFO-drained X-Stage (xsim.des.fifo_drain, exact) against the
time-stepped probe of benchmarks/tails_shape_probes.py (``fifo,SKEW``, dt = 0.01 us).

Each CTA starts SKEW x |z| us after the barrier (z ~ N(0, 1), per burst, the probe's seeds), owns
Q(K)/K credits, issues B bytes at B / T_iss0; prints mean / p90 / mean per-burst max issue time
(us, from each CTA's own start) of both.

    PYTHONPATH=. python benchmarks/fifo_drain_probe.py h200-pcie-host 0.07 132x32768 66x65536 ...
"""

from __future__ import annotations

import sys

import numpy as np

from benchmarks.tails_shape_probes import fifo_issue_us
from xsim.des.fifo_drain import simulate
from xsim.platform import resolve_platform
from xsim.units import gbps_to_bytes_per_us


def exact_issue_us(p, k: int, b: float, skew_us: float, bursts: int = 16, seed: int = 1) -> np.ndarray:
    """[bursts, K] issue times (us from each CTA's start), the probe's start skews."""
    rng = np.random.default_rng(seed)
    drain, cap = gbps_to_bytes_per_us(p.drain_rate_gbps), p.capacity_bytes(k) / k
    rate = b / p.t_iss0_us(k, b)
    out = np.empty((bursts, k))
    for j in range(bursts):
        start = skew_us * np.abs(rng.standard_normal(k))
        r = simulate(start, np.full(k, b), np.full(k, rate), np.full(k, cap), drain)
        out[j] = r.issue_end_us - start
    return out


def _row(x: np.ndarray) -> str:
    return f"{x.mean():7.2f} / {np.percentile(x, 90):7.2f} / {x.max(axis=1).mean():7.1f}"


def main() -> None:
    p, skew = resolve_platform(sys.argv[1]), float(sys.argv[2])
    print(f"{sys.argv[1]} skew {skew} us: K x B, exact mean / p90 / max, time-stepped mean / p90 / max (us)")
    for spec in sys.argv[3:]:
        k, b = (int(v) for v in spec.split("x"))
        print(f"  {k:4d} x {b // 1024:4d}K  {_row(exact_issue_us(p, k, b, skew))}   "
              f"{_row(fifo_issue_us(p, k, b, skew))}", flush=True)


if __name__ == "__main__":
    main()
