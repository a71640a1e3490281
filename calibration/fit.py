"""Fit a platform from micro records: the frozen :class:`FitResult` and :func:`fit_records`.

The stages (pure residuals, ``least_squares``, CIs) live in :mod:`calibration.stages`; this
module picks each stage's points by the regime the current parameters define (drain-limited,
recovered plateau, isolated knee) on the training part of the split, iterates the stages a
fixed number of times, and returns one parameter set with everything needed to audit it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from calibration import stages
from calibration.dataset import Split, choose_mechanism, split, store_records
from calibration.records import Record, RecordSet
from calibration.stages import FitError, StageFit
from calibration.threads import fit_thread_terms
from xsim.platform import REFERENCE_PRODUCERS, CapacityModel, IssueModel
from xsim.platform_laws import drain_rate_at
from xsim.units import MIB, drain_time_us, gbps_to_bytes_per_us

STATISTICS = ("mean", "median")


@dataclass(frozen=True)
class Points:
    """The columns of a list of micro records, one entry per record."""

    records: tuple[Record, ...]
    producers: np.ndarray
    burst_bytes: np.ndarray
    gap_us: np.ndarray
    aligned: np.ndarray
    isolated: np.ndarray
    warmup_bursts: np.ndarray
    issue_us: np.ndarray
    period_us: np.ndarray

    @property
    def volume_bytes(self) -> np.ndarray:
        return self.producers * self.burst_bytes

    @classmethod
    def of(cls, records, statistic: str = "mean") -> "Points":
        recs = tuple(records)
        col = lambda f, dt=float: np.asarray([f(r) for r in recs], dtype=dt)  # noqa: E731
        return cls(recs, col(lambda r: r.params["producers"]), col(lambda r: r.params["burst_bytes"]),
                   col(lambda r: r.params["gap_us"]), col(lambda r: bool(r.params["aligned"]), bool),
                   col(lambda r: r.kind == "isolated", bool), col(lambda r: r.params.get("warmup_bursts", 0)),
                   col(lambda r: r.stat("issue_us", statistic)), col(lambda r: r.stat("period_us", statistic)))


@dataclass(frozen=True)
class FitResult:
    """One calibrated parameter set, its stages (values, 95 % CIs, residuals) and its inputs."""

    mechanism: str
    threads: int | None
    statistic: str
    drain_rate_gbps: float
    issue_model: IssueModel
    capacity_model: CapacityModel
    drain: StageFit
    issue: StageFit
    knee_fits: dict[int, StageFit]      # per training K: the fit of Q_K (parameter capacity_mib)
    capacity: StageFit | None           # Q(K) = min(K q, Q_max) over the knees
    burst_overhead: StageFit            # free-running: period - issue - gap on the plateau
    grid_barrier: StageFit              # aligned: the barrier's extra producer-side time
    split: Split
    records_sha256: str
    mechanism_drain_gbps: dict[str, float] = field(default_factory=dict)
    baseline_gbps: dict[str, float] = field(default_factory=dict)
    threads_fit: dict = field(default_factory=dict)   # the threads-per-CTA term (calibration.threads)
    free_running_fit: dict = field(default_factory=dict)  # IssueModel.free_running_factor's fit
    drain_law: StageFit | None = None   # R(K) = R K/(K + K0), when it passed its rule (drain_half_producers)
    drain_law_mode: str = "off"         # how R(K) was fitted (fit_points): "k" fed back, "after" not
    zero_gap_barrier_fit: dict = field(default_factory=dict)  # Platform.grid_barrier_zero_gap_us's fit

    @property
    def zero_gap_barrier_us(self) -> float | None:
        return self.zero_gap_barrier_fit.get("value") if self.zero_gap_barrier_fit.get("taken") else None

    @property
    def drain_half_producers(self) -> float | None:
        return None if self.drain_law is None else self.drain_law.value("drain_half_producers")


def _t0(theta, p: Points) -> np.ndarray:
    return stages.issue0_us(stages.full_issue_theta(theta), p.producers, p.burst_bytes)


def _rates(p: Points, r: float, k0: float | None):
    """R per point: the scalar R, or R(K) of each point's K when the K law is taken (every helper
    below that takes ``r`` accepts either)."""
    if k0 is None:
        return r
    return np.asarray([drain_rate_at(r, int(k), k0, REFERENCE_PRODUCERS) for k in p.producers])


def _capacity_at(p: Points, knees: dict[int, float], model: CapacityModel | None) -> np.ndarray:
    """Q(K) per point: the point's own knee where one was fitted, else the model (inf if none)."""
    out = np.full(p.producers.size, np.inf)
    for i, k in enumerate(p.producers.astype(int)):
        if k in knees:
            out[i] = knees[k]
        elif model is not None:
            out[i] = model.capacity_bytes(int(k))
    return out


def _start(p: Points) -> tuple[float, np.ndarray, dict[int, float]]:
    """Starting values: R from the largest zero-gap volumes, T_iss0 from the smallest bursts."""
    zero = ~p.isolated & (p.gap_us == 0) & p.aligned
    if zero.sum() < 2:
        raise FitError("no aligned zero-gap periodic records to fit R from")
    big = zero & (p.volume_bytes >= np.median(p.volume_bytes[zero]))
    r = stages.fit_drain(p.volume_bytes[big], p.period_us[big]).values[0]
    small = p.isolated & (p.burst_bytes <= np.quantile(p.burst_bytes[p.isolated], 0.5)) if p.isolated.any() \
        else ~p.isolated & (p.gap_us > 0)
    theta = np.asarray(stages.fit_issue(p.producers[small], p.burst_bytes[small], p.issue_us[small]).values)
    knees = {}
    for k in sorted({int(x) for x in p.producers[p.isolated]}):
        m = p.isolated & (p.producers == k)
        knees[k] = float(np.max(p.volume_bytes[m] - gbps_to_bytes_per_us(r) * p.issue_us[m]))
    return r, theta, knees


def _issue_points(p: Points, r, theta, q: np.ndarray) -> np.ndarray:
    """Recovered plateau: isolated or gap >= 1.1 G*, and q_peak <= 0.9 Q (the gap as spun;
    the loop and barrier costs only add recovery time)."""
    t0 = _t0(theta, p)
    v_over_r = drain_time_us(p.volume_bytes, r)
    q_peak = p.volume_bytes - gbps_to_bytes_per_us(r) * t0
    recovered = p.isolated | (p.gap_us >= stages.RECOVERED_GAP_MARGIN * (v_over_r - t0))
    return recovered & (q_peak <= stages.CAPACITY_MARGIN * q)


def _drain_points(p: Points, r, theta, overhead_us: np.ndarray) -> np.ndarray:
    """Drain-limited zero-gap *aligned* periods: V/R >= 1.25 (T_iss0 + per-burst overhead).

    Free-running per-producer periods are left out: with unfair arbitration between SMs the
    fast producers finish early, so K / mean period is not the aggregate drain (docs/calibration.md).
    """
    t0 = _t0(theta, p)
    v_over_r = drain_time_us(p.volume_bytes, r)
    return ~p.isolated & p.aligned & (p.gap_us == 0) & (v_over_r >= stages.DRAIN_LIMITED_MARGIN * (t0 + overhead_us))


def _overheads(p: Points, r, theta, q: np.ndarray) -> tuple[StageFit, StageFit]:
    """Per-burst producer-side costs outside the issue span, from recovered periodic points:
    free-running ``period - issue - gap`` (loop bookkeeping), aligned minus that (the barrier)."""
    sel = _issue_points(p, r, theta, q) & ~p.isolated & (p.gap_us > 0)
    extra = p.period_us - p.issue_us - p.gap_us
    loop = stages.fit_constant("burst_overhead_us", extra[sel & ~p.aligned])
    barrier = stages.fit_constant("grid_barrier_us", extra[sel & p.aligned] - loop.values[0])
    return loop, barrier


ZERO_GAP_BARRIER_GAIN = 0.8   # the project's rule: a term is taken if it cuts its own rms residual by 20 %


def fit_zero_gap_barrier(p: Points, issue: IssueModel, r, loop_us: float, barrier_us: float) -> dict:
    """The barrier's latency with no gap before it, from the aligned zero-gap periodic points that are
    latency-bound (V/R x 1.25 <= T_iss0 + loop + barrier): the median of period - issue - loop, taken
    only if it cuts their rms relative period residual (against the G > 0 barrier) by 20 %."""
    t0 = np.asarray([issue.t_iss0_us(int(k), float(b)) for k, b in zip(p.producers, p.burst_bytes)])
    v_over_r = drain_time_us(p.volume_bytes, r)
    sel = (~p.isolated & p.aligned & (p.gap_us == 0)
           & (stages.DRAIN_LIMITED_MARGIN * v_over_r <= t0 + loop_us + barrier_us))
    n = int(sel.sum())
    if n < 2:
        return {"n_points": n, "taken": False}
    extra = p.period_us[sel] - p.issue_us[sel] - loop_us
    value = float(np.median(extra))
    before = float(np.sqrt(np.mean(np.square((extra - barrier_us) / p.period_us[sel]))))
    after = float(np.sqrt(np.mean(np.square((extra - value) / p.period_us[sel]))))
    return {"value": value, "n_points": n, "rms_relative_residual": after,
            "rms_relative_residual_g_barrier": before, "taken": bool(after < ZERO_GAP_BARRIER_GAIN * before)}


def overhead_us(p: Points, loop_us: float, barrier_us: float) -> np.ndarray:
    """Producer-side time per burst besides issue and gap: loop cost, plus the barrier if aligned."""
    return loop_us + np.where(p.aligned, barrier_us, 0.0)


def _knee_fits(p: Points, r, theta) -> dict[int, StageFit]:
    """Per K with isolated points: Q_K, when some point is past the knee (else unidentified).
    ``r``: R, or R per point (the K law)."""
    out = {}
    t0 = _t0(theta, p)
    for k in sorted({int(x) for x in p.producers[p.isolated]}):
        m = p.isolated & (p.producers == k)
        rk = r if np.ndim(r) == 0 else float(np.asarray(r)[m][0])
        knee = stages.fit_knee(t0[m], p.volume_bytes[m], rk, p.issue_us[m])
        q = knee.value("capacity_mib") * MIB
        if np.any(drain_time_us(p.volume_bytes[m] - q, rk) > t0[m]):
            out[k] = knee
    return out


@dataclass(frozen=True)
class Stages:
    drain: StageFit
    issue: StageFit
    knee_fits: dict[int, StageFit]      # per K: the fit of Q_K (parameter capacity_mib)
    capacity: StageFit | None
    capacity_model: CapacityModel
    burst_overhead: StageFit
    grid_barrier: StageFit
    drain_law: StageFit | None = None   # R(K), when it cut the one-R residual by 20 % (DRAIN_LAW_GAIN)


def _drain_stage(p: Points, sel: np.ndarray, drain_law: bool) -> tuple[StageFit, StageFit | None]:
    """R, and (``drain_law``) the K law R(K) = R K/(K + K0) when it cuts the one-R rms residual by 20 %."""
    drain = stages.fit_drain(p.volume_bytes[sel], p.period_us[sel])
    if not drain_law:
        return drain, None
    law = stages.fit_drain_law(p.volume_bytes[sel], p.period_us[sel], p.producers[sel], REFERENCE_PRODUCERS)
    if law is not None and law.rms_residual < stages.DRAIN_LAW_GAIN * drain.rms_residual:
        return drain, law
    return drain, None


DRAIN_LAWS = ("off", "k", "after")


def _drain_law_mode(drain_law) -> str:
    """``drain_law``: "off" (one R), "k" (R(K) fed back into every stage), "after" (R(K) fitted on the
    one-R stages' own drain-limited points once they have converged, fed back into none of them); a
    bool is "k" / "off" (older callers)."""
    mode = ("k" if drain_law else "off") if isinstance(drain_law, bool) else drain_law
    if mode not in DRAIN_LAWS:
        raise FitError(f'"drain_law" must be one of {", ".join(DRAIN_LAWS)}, got {drain_law!r}')
    return mode


def fit_points(p: Points, drain_law="off") -> Stages:
    """Every stage on the points ``p``. ``drain_law``: see :func:`_drain_law_mode`."""
    mode = _drain_law_mode(drain_law)
    r, theta, knees = _start(p)
    model, k0 = None, None
    for _ in range(stages.ITERATIONS):
        q = _capacity_at(p, knees, model)
        rates = _rates(p, r, k0)
        sel = _issue_points(p, rates, theta, q)
        issue = stages.fit_issue(p.producers[sel], p.burst_bytes[sel], p.issue_us[sel])
        theta = np.asarray(issue.values)
        loop, barrier = _overheads(p, rates, theta, q)
        sel = _drain_points(p, rates, theta, overhead_us(p, loop.values[0], barrier.values[0]))
        drain, law = _drain_stage(p, sel, mode == "k")
        r, k0 = (drain.values[0], None) if law is None else (law.values[0], law.values[1])
        knee_fits = _knee_fits(p, _rates(p, r, k0), theta)
        knees = {k: f.value("capacity_mib") * MIB for k, f in knee_fits.items()}  # bytes
        if not knees:
            raise FitError("no isolated burst is past the knee: Q cannot be fitted (larger bursts needed)")
        model, cap_fit = stages.capacity_model(knees)
    if mode == "after":   # the last iteration's drain-limited points: the ones R was fitted on
        law = _drain_stage(p, sel, True)[1]
    return Stages(drain, issue, knee_fits, cap_fit, model, loop, barrier, law)


FREE_RUNNING_GAIN = 0.8   # the factor is kept only if it cuts its points' rms relative residual by 20 %


def fit_free_running_factor(p: Points, issue: IssueModel, r) -> tuple[IssueModel, dict]:
    """IssueModel.free_running_factor from the free-running periodic points on the recovered plateau
    (gap >= 1.1 G*; unlike the T_iss0 stage, whatever V: out of phase, a free-running burst never
    presents V at once): the median of issue / T_iss0, kept only if it cuts their rms relative
    residual by :data:`FREE_RUNNING_GAIN`."""
    t0 = np.asarray([issue.t_iss0_us(int(k), float(b)) for k, b in zip(p.producers, p.burst_bytes)])
    g_star = drain_time_us(p.volume_bytes, r) - t0
    sel = ~p.isolated & ~p.aligned & (p.gap_us >= stages.RECOVERED_GAP_MARGIN * g_star)
    if sel.sum() < 3:
        return issue, {"n_points": int(sel.sum()), "factor": None, "note": "fewer than 3 free-running plateau points"}
    ratio = p.issue_us[sel] / t0[sel]
    factor = float(np.median(ratio))
    before, after = (float(np.sqrt(np.mean((x - 1.0) ** 2))) for x in (ratio, ratio / factor))
    kept = after < FREE_RUNNING_GAIN * before
    out = {"n_points": int(sel.sum()), "median_ratio": factor, "rms_rel_residual_without": before,
           "rms_rel_residual_with": after, "factor": factor if kept else None,
           "method": "free-running periodic training points on the recovered plateau: issue / T_iss0; the median "
                     "ratio, kept if it cuts their rms relative residual by 20 % (calibration/fit.py)"}
    return (dataclasses.replace(issue, free_running_factor=factor) if kept else issue), out


def _mechanism_drains(rs: RecordSet, chosen: str, r_chosen: float) -> dict[str, float]:
    """R per store mechanism: the chosen one's fit; others from the largest-volume half of their
    aligned zero-gap periods."""
    out = {chosen: r_chosen}
    mechs = sorted({r.params["mechanism"] for r in rs.select("micro", "periodic")} - {chosen})
    for m in mechs:
        p = Points.of([r for r in rs.select("micro", "periodic", mechanism=m)
                       if r.params.get("target", "remote") == "remote" and float(r.params["gap_us"]) == 0
                       and r.params["aligned"] and not r.data.get("flags")])
        if p.producers.size < 2:
            continue
        big = p.volume_bytes >= np.median(p.volume_bytes)
        out[m] = stages.fit_drain(p.volume_bytes[big], p.period_us[big]).values[0]
    return out


def _baselines(rs: RecordSet) -> dict[str, float]:
    """Best measured GB/s of each baseline kind (copy engine, NCCL) over transfer sizes."""
    out = {}
    for kind in ("ce-copy", "nccl"):
        rates = [float(r.data["gbps"]) for r in rs.select("micro", kind) if "gbps" in r.data]
        if rates:
            out[kind] = max(rates)
    return out


def fit_records(rs: RecordSet, mechanism: str | None = None, statistic: str = "mean",
                drain_law="off") -> FitResult:
    """Calibrate once: one parameter set from the training part of the chosen mechanism's records.
    ``drain_law``: also try R(K) = R K/(K + K0), taken by its 20 % rule, fed back into every stage ("k")
    or fitted after them for the DES and the free-running factor only ("after"); :func:`_drain_law_mode`."""
    if statistic not in STATISTICS:
        raise FitError(f'"statistic" must be one of {", ".join(STATISTICS)}, got {statistic!r}')
    law_mode = _drain_law_mode(drain_law)
    mech = choose_mechanism(rs, mechanism)
    recs = store_records(rs, mech)
    sp = split(recs)
    train = Points.of(sp.train, statistic)
    st = fit_points(train, law_mode)
    r = st.drain.values[0] if st.drain_law is None else st.drain_law.values[0]
    k0 = None if st.drain_law is None else st.drain_law.values[1]
    threads = recs[0].params.get("threads") if recs else None
    ks = {int(x.params["producers"]) for x in recs}
    issue = stages.issue_model(st.issue, ks)
    if threads is not None:
        issue, threads_fit = fit_thread_terms(rs, mech, int(threads), issue, st.capacity_model, r, sp.heldout_producers)
    else:
        threads_fit = {"n_points": 0, "note": "records name no thread count"}
    issue, free_fit = fit_free_running_factor(train, issue, _rates(train, r, k0))
    zero_fit = fit_zero_gap_barrier(train, issue, _rates(train, r, k0), st.burst_overhead.values[0],
                                    st.grid_barrier.values[0])
    return FitResult(mech, threads, statistic, r, issue, st.capacity_model,
                     st.drain, st.issue, st.knee_fits, st.capacity, st.burst_overhead, st.grid_barrier, sp,
                     rs.sha256, _mechanism_drains(rs, mech, r), _baselines(rs), threads_fit, free_fit, st.drain_law,
                     law_mode, zero_fit)
