"""The fit stages of M_X = (T_iss0(K, B), R, Q(K)): pure residuals and least squares, scipy-style.

Pure residual functions (relative: measured times span two decades), one
``scipy.optimize.least_squares`` per stage, and frozen results with parameters, 95 %
confidence intervals from the Jacobian (Student t), and residuals. The stages follow the
paper (Sec. 3.3-3.5), each using only the points its regime defines:

- **R**: zero-gap periodic periods that are drain-limited (V/R >= 1.25 T_iss0), T = V/R.
- **T_iss0**: issue times on the recovered plateau: periodic points whose gap exceeds the
  recovery gap G* by 10 % and isolated bursts, both with q_peak = V - R T_iss0 <= 0.9 Q(K);
  the IssueModel form ``t_fixed + B max(1/r_producer, K/r_aggregate)``.
- **Q**: per K, the isolated-burst curve ``max(T_iss0(K, B), (V - Q_K)/R)`` (the paper's
  ``Q = V_knee - R T_iss0`` at the knee), then ``Q(K) = min(K q_producer, Q_max)``.

The stages depend on each other's regime boundaries, so they are iterated a fixed number of
times from data-driven starting values; the result is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from xsim.platform import CapacityModel, IssueModel
from xsim.units import KIB, MIB, bytes_per_us_to_gbps, drain_time_us, gbps_to_bytes_per_us

ITERATIONS = 4
DRAIN_LIMITED_MARGIN = 1.25
RECOVERED_GAP_MARGIN = 1.10
CAPACITY_MARGIN = 0.90
TWO_RATE_GAIN = 0.8   # the two-rate T_iss0 form is kept only if it cuts the rms residual by 20 %
POWER_CAPACITY_GAIN = 0.8   # the power-law Q(K) is taken only if it cuts the best other rms residual by 20 %
DRAIN_LAW_GAIN = 0.8   # R(K) = R K/(K + K0) is taken only if it cuts the one-R rms residual by 20 %


class FitError(ValueError):
    """The records do not contain the points a fit stage needs."""


@dataclass(frozen=True)
class StageFit:
    """One least-squares stage: named parameters, 95 % CIs, relative residuals."""

    names: tuple[str, ...]
    values: tuple[float, ...]
    ci95: tuple[tuple[float, float], ...]
    residuals: tuple[float, ...]
    n_points: int
    residual_kind: str = "relative"   # (model - measured) / measured; "us" for absolute ones

    def value(self, name: str) -> float:
        return self.values[self.names.index(name)]

    @property
    def rms_residual(self) -> float:
        r = np.asarray(self.residuals)
        return float(np.sqrt(np.mean(r**2))) if r.size else float("nan")


# ---- model functions and pure residuals ---------------------------------------------------
def period_residuals(theta, volume_bytes, period_us):
    """theta = [R in GB/s]; relative residual of T_period = V / R."""
    return drain_time_us(volume_bytes, theta[0]) / period_us - 1.0


def drain_law_residuals(theta, volume_bytes, period_us, producers, ref_producers):
    """theta = [R at ref_producers in GB/s, K0]; relative residual of T_period = V / R(K),
    R(K) = R [K/(K + K0)] / [K_ref/(K_ref + K0)] (xsim.platform_laws.drain_rate_at)."""
    rate = theta[0] * (producers / (producers + theta[1])) * ((ref_producers + theta[1]) / ref_producers)
    return drain_time_us(volume_bytes, rate) / period_us - 1.0


def full_issue_theta(theta) -> list:
    """The IssueModel form's five values from a fitted theta: the one-rate form's three
    [t_fixed_us, us_per_kib_producer, us_per_kib_aggregate] stay as they are (their length says
    so); the two-rate form's four [t_fixed_us, us_per_kib_producer, fast_kib, us_per_kib_fast]
    (no aggregate ceiling: on H200 remote and local issue agree across K, docs/calibration.md)
    become [t_fixed_us, us_per_kib_producer, 0, fast_kib, us_per_kib_fast]."""
    theta = list(theta)
    if len(theta) == 4:
        return [theta[0], theta[1], 0.0, theta[2], theta[3]]
    return theta


def issue0_us(theta, producers, burst_bytes):
    """The IssueModel form. theta = [t_fixed_us, us_per_kib_producer, us_per_kib_aggregate]
    (one rate), or those plus [fast_kib, us_per_kib_fast] (the first fast_kib of a burst faster);
    a fitted two-rate theta goes through :func:`full_issue_theta` first."""
    t_fixed, u_producer, u_aggregate = theta[:3]
    slow = np.maximum(u_producer, producers * u_aggregate)
    kib = burst_bytes / KIB
    if len(theta) == 3:
        return t_fixed + kib * slow
    fast_kib, u_fast = theta[3], theta[4]
    fast = np.minimum(kib, fast_kib)
    return t_fixed + fast * u_fast + (kib - fast) * slow


def issue_residuals(theta, producers, burst_bytes, issue_us):
    return issue0_us(theta, producers, burst_bytes) / issue_us - 1.0


def isolated_residuals(theta, t_iss0_us, volume_bytes, drain_rate_gbps, issue_us):
    """theta = [Q_K in MiB]; eq. 7: max(T_iss0, (V - Q)/R)."""
    capacity_bytes = theta[0] * MIB
    model = np.maximum(t_iss0_us, drain_time_us(volume_bytes - capacity_bytes, drain_rate_gbps))
    return model / issue_us - 1.0


def capacity_residuals(theta, producers, capacity_bytes):
    """theta = [q_per_producer_kib, q_max_mib]: Q(K) = min(K q_producer, Q_max)."""
    model = np.minimum(producers * theta[0] * KIB, theta[1] * MIB)
    return model / capacity_bytes - 1.0


def affine_capacity_residuals(theta, producers, capacity_bytes):
    """theta = [shared_mib, q_per_producer_kib]: Q(K) = Q_shared + K q_producer."""
    return (theta[0] * MIB + producers * theta[1] * KIB) / capacity_bytes - 1.0


def power_capacity_residuals(theta, producers, capacity_bytes):
    """theta = [q_one_producer_kib, exponent]: Q(K) = q_1 K^p (concave for p < 1)."""
    return theta[0] * KIB * np.power(producers, theta[1]) / capacity_bytes - 1.0


def constant_residuals(theta, values_us):
    """theta = [c in us]; absolute residual of a constant (a per-burst producer-side cost)."""
    return theta[0] - values_us


def _stage(fun, x0, args, names, lower, upper, residual_kind: str = "relative") -> StageFit:
    x0 = np.clip(np.asarray(x0, float), lower, upper)
    res = optimize.least_squares(fun, x0, args=args, bounds=(lower, upper), method="trf",
                                 x_scale="jac", xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=2000)
    n, p = res.fun.size, res.x.size
    half = np.full(p, np.nan)
    if n > p:
        s2 = 2.0 * res.cost / (n - p)
        cov = s2 * np.linalg.pinv(res.jac.T @ res.jac)
        half = stats.t.ppf(0.975, n - p) * np.sqrt(np.clip(np.diag(cov), 0.0, None))
    values = tuple(float(v) for v in res.x)
    ci = tuple((float(v - h), float(v + h)) for v, h in zip(res.x, half))
    return StageFit(tuple(names), values, ci, tuple(float(r) for r in res.fun), n, residual_kind)


# ---- stages -------------------------------------------------------------------------------
def fit_drain(volume_bytes, period_us) -> StageFit:
    """R from T_period = V / R; starting value from the total volume over the total time."""
    if len(volume_bytes) < 2:
        raise FitError("fitting R needs at least two drain-limited zero-gap periodic points")
    r0 = float(bytes_per_us_to_gbps(np.sum(volume_bytes) / np.sum(period_us)))
    return _stage(period_residuals, [r0], (volume_bytes, period_us), ("drain_rate_gbps",), [1e-3], [1e6])


def fit_drain_law(volume_bytes, period_us, producers, ref_producers: int) -> StageFit | None:
    """R(K) = R K/(K + K0) given as R at ``ref_producers``, with K0 >= 0; None unless the points
    span at least two K (K0 is not identified by one)."""
    producers = np.asarray(producers, float)
    if np.unique(producers).size < 2 or len(volume_bytes) < 3:
        return None
    r0 = float(bytes_per_us_to_gbps(np.sum(volume_bytes) / np.sum(period_us)))
    return _stage(drain_law_residuals, [r0, 1.0], (volume_bytes, period_us, producers, float(ref_producers)),
                  ("drain_rate_gbps", "drain_half_producers"), [1e-3, 0.0], [1e6, 1e4])


def fit_constant(name: str, values_us) -> StageFit:
    """A per-burst cost in microseconds (>= 0) as the least-squares constant of its samples."""
    if len(values_us) < 2:
        raise FitError(f"fitting {name} needs at least two recovered periodic points")
    return _stage(constant_residuals, [max(float(np.median(values_us)), 0.0)], (values_us,), (name,), [0.0], [1e3], "us")


def fit_issue(producers, burst_bytes, issue_us) -> StageFit:
    """T_iss0(K, B) in the IssueModel form; starts from per-K slopes."""
    if len(issue_us) < 3:
        raise FitError("fitting T_iss0 needs at least three recovered-plateau issue times")
    slopes = []
    for k in np.unique(producers):
        m = producers == k
        if np.unique(burst_bytes[m]).size >= 2:
            slopes.append((k, np.polyfit(burst_bytes[m] / KIB, issue_us[m], 1)[0]))
    if slopes:
        u_producer = max(min(s for _, s in slopes), 1e-6)
        u_aggregate = max(max(s / k for k, s in slopes), 1e-9)
    else:
        u_producer, u_aggregate = float(np.median(issue_us / (burst_bytes / KIB))), 1e-9
    t_fixed = max(float(np.min(issue_us)) * 0.1, 0.0)
    args = (producers, burst_bytes, issue_us)
    one = _stage(issue_residuals, [t_fixed, u_producer, u_aggregate], args,
                 ("t_fixed_us", "us_per_kib_producer", "us_per_kib_aggregate"), [0, 0, 0], [1e3, 1e3, 1e3])
    two = _two_rate(one, args)
    return two if two is not None and two.rms_residual < TWO_RATE_GAIN * one.rms_residual else one


def two_rate_residuals(theta, producers, burst_bytes, issue_us):
    """theta = [t_fixed_us, us_per_kib_producer, fast_kib, us_per_kib_fast] (:func:`full_issue_theta`)."""
    return issue0_us(full_issue_theta(theta), producers, burst_bytes) / issue_us - 1.0


def _two_rate(one: StageFit, args) -> StageFit | None:
    """The two-rate form, started from each measured B as the fast-part size; the best one."""
    producers, burst_bytes, issue_us = args
    names = ("t_fixed_us", "us_per_kib_producer", "fast_kib", "us_per_kib_fast")
    best = None
    kibs = np.unique(burst_bytes / KIB)
    if kibs.size < 4:
        return None
    for fast_kib in kibs[1:-1]:
        x0 = [one.values[0], max(one.values[1], 1e-6), float(fast_kib), max(one.values[1], 1e-6) * 0.5]
        fit = _stage(two_rate_residuals, x0, args, names, [0, 0, 0, 0], [1e3, 1e3, 1e4, 1e3])
        if best is None or fit.rms_residual < best.rms_residual:
            best = fit
    return best


def fit_knee(t_iss0_us, volume_bytes, drain_rate_gbps, issue_us) -> StageFit:
    """Q_K for one K: start where the knee is, q_peak at the most backpressured point."""
    q0 = float(np.max(volume_bytes - gbps_to_bytes_per_us(drain_rate_gbps) * issue_us)) / MIB
    return _stage(isolated_residuals, [max(q0, 1e-3)], (t_iss0_us, volume_bytes, drain_rate_gbps, issue_us),
                  ("capacity_mib",), [1e-6], [1e6])


def fit_capacity(producers, capacity_bytes) -> StageFit:
    q_per = float(np.max(capacity_bytes / producers)) / KIB
    q_max = float(np.max(capacity_bytes)) / MIB
    return _stage(capacity_residuals, [q_per, q_max], (producers, capacity_bytes),
                  ("per_producer_kib", "max_mib"), [1e-6, 1e-6], [1e6, 1e6])


# ---- turning stage values into the platform's models ---------------------------------------
def issue_model(fit: StageFit, producers_seen) -> IssueModel:
    """IssueModel from the T_iss0 stage; a branch that binds at no K seen is left out (None)."""
    if len(fit.values) == 4:  # two-rate form: [t_fixed, u_producer, fast_kib, u_fast]
        t_fixed, u_p, fast_kib, u_fast = fit.values
        to_gbps = lambda u: bytes_per_us_to_gbps(KIB / u)  # noqa: E731  us per KiB -> GB/s
        return IssueModel(t_fixed_us=t_fixed, producer_issue_gbps=to_gbps(u_p), fast_bytes=fast_kib * KIB,
                          fast_issue_gbps=to_gbps(u_fast))
    t_fixed, u_p, u_a = fit.values[:3]
    ks = np.asarray(sorted(producers_seen), float)
    producer_binds = np.any(u_p >= ks * u_a) and u_p > 0
    aggregate_binds = np.any(ks * u_a > u_p) and u_a > 0
    to_gbps = lambda u: bytes_per_us_to_gbps(KIB / u)  # noqa: E731  us per KiB -> GB/s
    return IssueModel(t_fixed_us=t_fixed,
                      producer_issue_gbps=to_gbps(u_p) if producer_binds else None,
                      aggregate_issue_gbps=to_gbps(u_a) if aggregate_binds else None)


def fit_capacity_affine(producers, capacity_bytes) -> StageFit:
    slope = float(np.polyfit(producers, capacity_bytes, 1)[0]) if np.unique(producers).size > 1 else 0.0
    q_per = max(slope, 1.0) / KIB
    shared = max(float(np.min(capacity_bytes - producers * q_per * KIB)), 0.0) / MIB
    return _stage(affine_capacity_residuals, [shared, q_per], (producers, capacity_bytes),
                  ("shared_mib", "per_producer_kib"), [0.0, 1e-6], [1e6, 1e6])


def fit_capacity_power(producers, capacity_bytes) -> StageFit:
    p0 = float(np.polyfit(np.log(producers), np.log(capacity_bytes), 1)[0]) if np.unique(producers).size > 1 else 1.0
    p0 = min(max(p0, 0.05), 2.0)
    q1 = float(np.exp(np.mean(np.log(capacity_bytes) - p0 * np.log(producers)))) / KIB
    return _stage(power_capacity_residuals, [q1, p0], (producers, capacity_bytes),
                  ("one_producer_kib", "exponent"), [1e-6, 0.01], [1e9, 2.0])


def capacity_model(q_by_k: dict[int, float]) -> tuple[CapacityModel, StageFit | None]:
    """CapacityModel from per-K knees: a single K gives a constant; else the best (lowest rms
    residual over the knees) of min(K q, Q_max), the affine Q_shared + K q and, with three or
    more knees, the power law q_1 K^p (which must beat both by 20 % of its rms to be taken)."""
    ks = np.asarray(sorted(q_by_k), float)
    qs = np.asarray([q_by_k[int(k)] for k in ks])
    if ks.size < 2:
        return CapacityModel(max_bytes=float(qs[0])), None
    fit = fit_capacity(ks, qs)
    affine = fit_capacity_affine(ks, qs)
    if ks.size >= 3:
        power = fit_capacity_power(ks, qs)
        if power.rms_residual < POWER_CAPACITY_GAIN * min(fit.rms_residual, affine.rms_residual):
            return CapacityModel(per_producer_bytes=power.value("one_producer_kib") * KIB,
                                 exponent=power.value("exponent")), power
    if affine.rms_residual < fit.rms_residual:
        shared, q_per = affine.value("shared_mib") * MIB, affine.value("per_producer_kib") * KIB
        return CapacityModel(per_producer_bytes=q_per, shared_bytes=shared if shared > 0 else None), affine
    q_per, q_max = fit.value("per_producer_kib") * KIB, fit.value("max_mib") * MIB
    per_binds, max_binds = np.any(ks * q_per < q_max), np.any(ks * q_per >= q_max)
    return CapacityModel(max_bytes=q_max if max_binds else None,
                         per_producer_bytes=q_per if per_binds else None), fit
