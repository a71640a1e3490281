"""The fluid X-Stage: one source GPU's outstanding-store queue, drained at rate R.

State: outstanding bytes ``q`` (0 <= q <= Q), cumulative drained bytes ``D``, and a service
clock ``S``. Every active issuer injects at its nominal rate ``r_i = bytes_i / T_iss0_i``
scaled by a common admission factor ``phi``; so issuer i, which joined at service time
``S_i``, finishes exactly when ``S = S_i + T_iss0_i``. Rates are piecewise constant between
events:

- full and oversubscribed (q = Q, sum r_i > R): ``phi = R / sum r_i``, drain R, q stays Q;
- otherwise phi = 1, and the drain is work-conserving: R while q > 0 or inflow exceeds R,
  else it passes the inflow straight through (q stays 0).

These few functions are the whole arithmetic of the X-Stage; the SimPy engine calls them as
Python, the fast engine compiles the same source with numba, so both round identically.
"""

from __future__ import annotations

import math

import numpy as np

# Thresholds are relative to the magnitude they compare (bytes or microseconds).
REL_TOL = 1e-12


def rates(q: float, capacity: float, drain: float, inflow: float) -> tuple[float, float]:
    """Admission factor phi and actual drain rate for the current state."""
    if inflow > drain and q >= capacity:
        return drain / inflow, drain
    if q > 0.0 or inflow > drain:
        return 1.0, drain
    return 1.0, inflow


def advance(q: float, drained: float, service: float, dt: float,
            capacity: float, drain: float, inflow: float) -> tuple[float, float, float]:
    """State after ``dt`` microseconds at constant rates, clamped onto [0, Q]."""
    if dt <= 0.0:
        return q, drained, service
    phi, out = rates(q, capacity, drain, inflow)
    q = q + (phi * inflow - out) * dt
    drained = drained + out * dt
    tol = REL_TOL * capacity
    if q >= capacity - tol:
        q = capacity
    elif q <= tol:  # the residual has drained: keep bytes conserved
        drained, q = drained + q, 0.0
    return q, drained, service + phi * dt


def time_to_boundary(q: float, capacity: float, drain: float, inflow: float) -> float:
    """Time until q reaches Q or 0 at the current rates (inf if it never does)."""
    if inflow > drain and q >= capacity:
        return math.inf  # full: admission equals drain, q holds at Q
    phi, out = rates(q, capacity, drain, inflow)
    dq = phi * inflow - out
    if dq > 0.0:
        return (capacity - q) / dq
    if dq < 0.0:
        return q / -dq
    return math.inf


def snap(q: float, drained: float, capacity: float, drain: float, inflow: float,
         now: float) -> tuple[float, float]:
    """(q, drained) with q put exactly on the boundary (Q or 0) it is due to reach now."""
    if not due(time_to_boundary(q, capacity, drain, inflow), now):
        return q, drained
    if inflow > drain:
        return capacity, drained
    return 0.0, drained + q


def time_to_service(target: float, service: float, q: float, capacity: float,
                    drain: float, inflow: float) -> float:
    """Time until the service clock reaches ``target`` (an issuer's finish)."""
    phi, _ = rates(q, capacity, drain, inflow)
    return max(target - service, 0.0) / phi


def time_to_drained(mark: float, drained: float, q: float, capacity: float,
                    drain: float, inflow: float) -> float:
    """Time until cumulative drained bytes reach ``mark`` (a tile's last byte)."""
    _, out = rates(q, capacity, drain, inflow)
    if mark - drained <= REL_TOL * max(1.0, mark):
        return 0.0
    return (mark - drained) / out if out > 0.0 else math.inf


def due(dt: float, now: float) -> bool:
    """An event ``dt`` ahead of ``now`` is due now: closer than rounding can resolve."""
    return dt <= REL_TOL * max(1.0, now)


# ---- per-issuer admission under backpressure --------------------------------------------------
# While the X-Stage is full and oversubscribed, the drain R is shared among the active issuers by
# weighted water-filling: issuer i is admitted at phi_i * r_i with phi_i = min(1, c * w_i) and c
# chosen so that sum_i phi_i r_i = R. Equal weights give phi_i = R / sum r_i (a fair share);
# unequal weights model the hardware's fixed arbitration preference among SMs. Otherwise every
# active issuer injects at its nominal rate (phi_i = 1).

def shares(q: float, capacity: float, drain: float, inflow: float,
           rate, weight, n: int, phi) -> None:
    """Fill ``phi[:n]``, the admission factor of each of the ``n`` active issuers."""
    for i in range(n):
        phi[i] = 1.0
    if not (inflow > drain and q >= capacity):
        return
    order = np.argsort(-weight[:n], kind="mergesort")  # heaviest first; ties by position
    open_rw = 0.0
    for i in range(n):
        open_rw += rate[i] * weight[i]
    sat_rate, k, c = 0.0, 0, 0.0
    while k < n:
        c = (drain - sat_rate) / open_rw
        j = order[k]
        if c * weight[j] <= 1.0:
            break
        sat_rate += rate[j]       # j is admitted in full; the rest share what remains
        open_rw -= rate[j] * weight[j]
        k += 1
    for m in range(k, n):
        j = order[m]
        phi[j] = c * weight[j]


def progress(left, rate, phi, n: int, dt: float) -> None:
    """Bytes left to issue after ``dt`` at the admitted rates."""
    for i in range(n):
        left[i] = max(left[i] - phi[i] * rate[i] * dt, 0.0)


def time_to_finish(remaining: float, rate: float, phi: float) -> float:
    """Time until an issuer with ``remaining`` bytes has injected them at ``phi * rate``."""
    return remaining / (phi * rate) if remaining > 0.0 else 0.0
