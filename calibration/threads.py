"""The threads-per-CTA term of T_iss0, from the isolated bursts of other thread counts.

The main fit is for one thread count (the most common, 256). The ``tiss0`` group also measures
128, 512 and 1024 threads at a few (K, B); on the recovered plateau (``q_peak <= 0.9 Q``) their
issue times differ from the 256-thread model by a per-count amount that grows with B
(H200, both links: 8 KiB takes 0.113 us at 256 threads and 0.133-0.144 us at 128/512/1024 over
NVLink). Per thread count, ``measured - T_iss0_ref(K, B) = extra_us + extra_us_per_kib * B/KiB``
by linear least squares over the training points (the held-out K is left out), and the held-out
K's points report the error before and after.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import numpy as np

from calibration.dataset import store_records
from calibration.fidelity import mape_percent
from calibration.records import RecordSet
from calibration.stages import CAPACITY_MARGIN
from xsim.platform import CapacityModel, IssueModel
from xsim.units import gbps_to_bytes_per_us


def _plateau(records, issue: IssueModel, capacity: CapacityModel, drain_gbps: float) -> list:
    out = []
    for r in records:
        if r.kind != "isolated":
            continue
        k, b = int(r.params["producers"]), float(r.params["burst_bytes"])
        q_peak = k * b - gbps_to_bytes_per_us(drain_gbps) * issue.t_iss0_us(k, b)
        if q_peak <= CAPACITY_MARGIN * capacity.capacity_bytes(k):
            out.append(r)
    return out


def _terms(points, issue: IssueModel) -> tuple[float, float]:
    b_kib = np.array([float(r.params["burst_bytes"]) / 1024 for r in points])
    resid = np.array([r.stat("issue_us", "mean") - issue.t_iss0_us(int(r.params["producers"]),
                                                                    float(r.params["burst_bytes"])) for r in points])
    if np.unique(b_kib).size < 2:
        return float(resid.mean()), 0.0
    (extra, per_kib), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(b_kib), b_kib]), resid, rcond=None)
    return float(extra), float(per_kib)


def fit_thread_terms(rs: RecordSet, mechanism: str, ref_threads: int, issue: IssueModel,
                     capacity: CapacityModel, drain_gbps: float, heldout_k: int | None) -> tuple[IssueModel, dict]:
    """The issue model with a threads term (unchanged when no other thread count was measured)."""
    by_threads = defaultdict(list)
    for t in sorted({r.params.get("threads") for r in rs.select("micro") if r.params.get("mechanism") == mechanism}
                    - {ref_threads, None}):
        by_threads[int(t)] = _plateau(store_records(rs, mechanism, int(t)), issue, capacity, drain_gbps)
    terms, train_n, held = [(ref_threads, 0.0, 0.0)], 0, []
    for t, points in sorted(by_threads.items()):
        train = [r for r in points if int(r.params["producers"]) != heldout_k]
        if len(train) < 2:
            continue
        terms.append((t, *_terms(train, issue)))
        train_n += len(train)
        held += [(t, r) for r in points if int(r.params["producers"]) == heldout_k]
    if len(terms) == 1:
        return issue, {"n_points": 0, "note": "no other thread count on the plateau"}
    model = dataclasses.replace(issue, threads_ref=int(ref_threads), thread_terms=tuple(terms))
    meas = [r.stat("issue_us", "mean") for _, r in held]
    kb = [(int(r.params["producers"]), float(r.params["burst_bytes"])) for _, r in held]
    summary = {
        "form": "T_iss0(K, B, threads) = T_iss0_ref(K, B) + extra_us + extra_us_per_kib * B / KiB",
        "threads_ref": int(ref_threads),
        "terms": {str(t): {"extra_us": a, "extra_us_per_kib": c} for t, a, c in terms},
        "n_points": train_n,
        "heldout_n_points": len(held),
        "heldout_issue_mape_without": mape_percent([issue.t_iss0_us(k, b) for k, b in kb], meas),
        "heldout_issue_mape_with": mape_percent([model.t_iss0_us(k, b, t) for (t, _), (k, b) in zip(held, kb)], meas),
    }
    return model, summary
