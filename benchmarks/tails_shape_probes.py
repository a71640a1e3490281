"""Can a variant of the fluid X-Stage give the measured shape of a backpressured aligned burst?

A standalone time-stepped fluid (numpy, dt = 0.01 us) of one aligned burst of K CTAs x B bytes on a
platform, with the profile's static SM weights (shrunk, ``--e``) times a per-burst lognormal factor
(``sigma``), three knobs:

- ``beta``: drain priority of a CTA that is still issuing (its weight x beta; 1 = the DES);
- ``alpha``: a shared pool of Q(K) bytes plus a per-CTA limit alpha Q(K)/K (1 = the DES's fixed share);
  freed pool capacity goes to the CTAs that want it in proportion to their weights.

and a second model, ``fifo,SKEW`` (no weights at all): each CTA keeps its Q(K)/K credits, the link
drains one FIFO at R in the order the bytes were accepted, and CTA i starts issuing at
SKEW x |z_i| us after the barrier (z ~ N(0, 1), per burst).

With beta = alpha = 1 it is the DES's model (its numbers are within a few % of the DES's on the
weight trace's point). Prints mean / p90 / mean per-burst max issue and the share of CTAs at the floor,
against the trace (host K = 132 x 32 KiB: 7.41 / 16.45 / 28.19 us, 10-25 % at the floor).

    PYTHONPATH=. python benchmarks/tails_shape_probes.py h200-pcie-host 132 32768 beta,alpha,e,sigma ... fifo,0.07
"""

from __future__ import annotations

import sys

import numpy as np

from xsim.platform import resolve_platform
from xsim.units import gbps_to_bytes_per_us


def burst_issue_us(p, k: int, b: float, beta: float, alpha: float, e: float, sigma: float,
                   bursts: int = 24, dt: float = 0.01, seed: int = 1) -> np.ndarray:
    """[bursts, K] issue end times (us) of CTAs that start at once on an empty stage."""
    rng = np.random.default_rng(seed)
    r_drain = gbps_to_bytes_per_us(p.drain_rate_gbps)
    q_total = p.capacity_bytes(k)
    limit = alpha * q_total / k
    rate = b / p.t_iss0_us(k, b)
    arb = p.arbitration
    w0 = np.asarray(arb.weights_for(k)) ** (e / arb.weight_exponent)
    out = np.full((bursts, k), np.nan)
    for j in range(bursts):
        w = w0 * np.exp(sigma * rng.standard_normal(k) - sigma ** 2 / 2)
        acc, drained, t = np.zeros(k), np.zeros(k), 0.0
        while np.isnan(out[j]).any() and t < 1e4:
            q = acc - drained
            ww = np.where(q > 1e-9, w * np.where(acc < b, beta, 1.0), 0.0)
            if ww.sum() > 0:
                drained += np.minimum(r_drain * dt * ww / ww.sum(), q)
            q = acc - drained
            want = np.where(acc < b, np.minimum(np.minimum(rate * dt, b - acc), np.maximum(limit - q, 0.0)), 0.0)
            room = max(q_total - q.sum(), 0.0)
            if want.sum() > room:       # the pool is full: hand out what frees by weight (water-filling)
                give, active = np.zeros(k), want > 0
                for _ in range(32):
                    if room - give.sum() <= 1e-9 or not active.any():
                        break
                    share = (room - give.sum()) * np.where(active, w, 0.0) / np.where(active, w, 0.0).sum()
                    give += np.minimum(share, want - give)
                    active &= give < want - 1e-12
                want = give
            acc += want
            t += dt
            done = np.isnan(out[j]) & (acc >= b - 1e-6)
            out[j, done] = t
    return out


def fifo_issue_us(p, k: int, b: float, skew_us: float, bursts: int = 16, dt: float = 0.01,
                  seed: int = 1) -> np.ndarray:
    """[bursts, K] issue end times (us, from each CTA's own start) with per-CTA credits and one FIFO."""
    rng = np.random.default_rng(seed)
    r_drain, cap = gbps_to_bytes_per_us(p.drain_rate_gbps), p.capacity_bytes(k) / k
    rate = b / p.t_iss0_us(k, b)
    out = np.full((bursts, k), np.nan)
    for j in range(bursts):
        start = skew_us * np.abs(rng.standard_normal(k))
        acc, drained, t = np.zeros(k), np.zeros(k), 0.0
        fifo, head, partial = [], 0, None        # accepted bytes per step, in order; the head's rest
        while np.isnan(out[j]).any() and t < 1e4:
            budget = r_drain * dt
            while budget > 1e-12 and head < len(fifo):
                seg = fifo[head] if partial is None else partial
                if seg.sum() <= budget:
                    drained += seg
                    budget -= seg.sum()
                    head, partial = head + 1, None
                else:
                    f = budget / seg.sum()
                    drained += seg * f
                    partial, budget = seg * (1 - f), 0.0
            go = (t >= start) & (acc < b)
            inj = np.where(go, np.minimum(np.minimum(rate * dt, b - acc), np.maximum(cap - (acc - drained), 0.0)), 0.0)
            acc += inj
            if inj.sum() > 0:
                fifo.append(inj)
            t += dt
            done = np.isnan(out[j]) & (acc >= b - 1e-6)
            out[j, done] = t - start[done]
    return out


def main() -> None:
    name, k, b = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    p = resolve_platform(name)
    t0 = p.t_iss0_us(k, b)
    print(f"{name} K={k} B={b / 1024:.0f} KiB, T_iss0 {t0:.2f} us; beta,alpha,e,sigma: mean / p90 / max us, floor share")
    for spec in sys.argv[4:]:
        if spec.startswith("fifo,"):
            x = fifo_issue_us(p, k, b, float(spec.split(",")[1]))
        else:
            beta, alpha, e, sigma = (float(v) for v in spec.split(","))
            x = burst_issue_us(p, k, b, beta, alpha, e, sigma)
        print(f"  {spec:22s} {np.nanmean(x):6.2f} / {np.nanpercentile(x, 90):6.2f} / {np.nanmean(np.nanmax(x, axis=1)):6.1f}"
              f"   {np.mean(x < 1.5 * t0):.2f}", flush=True)


if __name__ == "__main__":
    main()
