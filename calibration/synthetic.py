"""Synthetic measurement records, simulated by the DES on a platform with known parameters.

Used to test the fit (it must recover the parameters it was given) and to develop the report
without hardware. The plan mirrors the hardware suite's shape (``hwkernels/plan.py``):
zero-gap periodic points over K x B, gap sweeps at fractions of the zero-gap period, and
isolated bursts over B, each aligned and free-running. Noise is seeded and multiplicative.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from xsim.platform import CapacityModel, IssueModel, Platform
from xsim.simulate_point import micro_params, simulate_point
from xsim.units import KIB, MIB, drain_time_us

SYNTHETIC_PLATFORM = {"gpu": "synthetic (xsim DES)", "gpu_count": 2, "sms": 132, "sm_clock_mhz": 1980,
                      "link": "none", "driver": "none", "cuda": "none", "torch": "none", "triton": "none"}


def known_platform() -> Platform:
    """The parameters synthetic records are generated from (both T_iss0 branches, both Q bounds)."""
    return Platform(
        name="synthetic-known", drain_rate_gbps=450.0,
        issue=IssueModel(t_fixed_us=0.25, producer_issue_gbps=50.0, aggregate_issue_gbps=3000.0),
        capacity=CapacityModel(max_bytes=3 * MIB, per_producer_bytes=48 * KIB),
        burst_overhead_us=0.15, grid_barrier_us=0.0,
        status="override", description="known parameters of the synthetic records")


@dataclass(frozen=True)
class SyntheticPlan:
    producers: tuple[int, ...] = (16, 33, 66, 132)
    rfit_bytes: tuple[int, ...] = tuple(b * KIB for b in (4, 8, 16, 32, 64, 128))
    gap_configs: tuple[tuple[int, int], ...] = ((132, 32 * KIB), (66, 64 * KIB), (33, 32 * KIB))
    gap_fracs: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 1.0, 1.1, 1.2, 1.5, 2.0, 3.0)
    iso_bytes: tuple[int, ...] = tuple(b * KIB for b in (4, 8, 16, 24, 32, 40, 48, 64, 80, 96, 128, 192))
    bursts: int = 32
    warmup_bursts: int = 12
    timeout_s: float = 3.0
    noise_rel: float = 0.01
    seed: int = 7


def _stats(value: float, rng, noise_rel: float, n: int) -> dict:
    """A statistic block around ``value``: mean with noise, a small spread for the quantiles."""
    mean = value * float(np.exp(rng.normal(0.0, noise_rel)))
    return {"mean": mean, "median": mean, "p10": mean * 0.98, "p90": mean * 1.02,
            "min": mean * 0.97, "max": mean * 1.04, "n": n}


def _point(platform: Platform, plan: SyntheticPlan, mode: str, k: int, b: int, gap_us: float, aligned: bool):
    params = micro_params(mode, k, b, gap_us, aligned, plan.bursts, plan.warmup_bursts)
    return simulate_point(params, platform, timeout_s=plan.timeout_s)


def _record(kind: str, k: int, b: int, gap_us: float, aligned: bool, summary: dict, plan, rng, index: int) -> dict:
    n = k * (plan.bursts - plan.warmup_bursts)
    stats = {name: _stats(summary[name]["mean"], rng, plan.noise_rel, n)
             for name in ("issue_us", "burst_issue_us", "period_us")}
    stats["kernel_us"] = _stats(summary["makespan_us"], rng, plan.noise_rel, 5)
    params = {"producers": k, "burst_bytes": b, "gap_us": round(gap_us, 3), "bursts": plan.bursts,
              "warmup_bursts": plan.warmup_bursts, "aligned": aligned, "mechanism": "st.v4",
              "threads": 256, "target": "remote", "src_rank": 0, "dst_rank": 1, "world_size": 2}
    return {"schema": "xstage.record/1", "experiment": "micro", "kind": kind, "params": params,
            "stats": stats, "check": {"ok": True, "max_abs_err": 0.0}, "platform": dict(SYNTHETIC_PLATFORM),
            "commit": "synthetic", "dirty": False, "time_utc": f"2026-01-01T00:{index // 60:02d}:{index % 60:02d}Z"}


def _add(out: list, kind: str, k: int, b: int, gap_us: float, aligned: bool, platform, plan, rng) -> None:
    """Simulate one point and append its record (a point the engine cannot finish is left out)."""
    summary = _point(platform, plan, "isolated" if kind == "isolated" else "periodic", k, b, gap_us, aligned)
    if summary is not None:
        out.append(_record(kind, k, b, gap_us, aligned, summary, plan, rng, len(out)))


def _baselines(platform: Platform, rng, start: int) -> list[dict]:
    out = []
    for i, (kind, factor) in enumerate((("ce-copy", 1.05), ("nccl", 0.9))):
        gbps = platform.drain_rate_gbps * factor
        nbytes = 256 << 20
        t_us = drain_time_us(nbytes, gbps)
        out.append({"schema": "xstage.record/1", "experiment": "micro", "kind": kind,
                    "params": {"producers": 1, "burst_bytes": nbytes, "gap_us": 0.0, "bursts": 10,
                               "warmup_bursts": 2, "aligned": False, "mechanism": kind if kind == "nccl"
                               else "copy-engine", "threads": 0, "target": "remote"},
                    "stats": {"kernel_us": _stats(t_us, rng, 0.0, 10)}, "gbps": gbps,
                    "check": {"ok": True, "max_abs_err": 0.0}, "platform": dict(SYNTHETIC_PLATFORM),
                    "commit": "synthetic", "dirty": False, "time_utc": f"2026-01-01T01:00:{start + i:02d}Z"})
    return out


def small_plan() -> SyntheticPlan:
    """A plan small enough for tests (a few seconds) that still identifies every parameter."""
    return SyntheticPlan(rfit_bytes=tuple(b * KIB for b in (8, 16, 32, 64, 128)),
                         gap_configs=((132, 32 * KIB), (33, 32 * KIB)),
                         gap_fracs=(0.0, 0.3, 0.6, 0.9, 1.2, 1.5, 2.0, 3.0),
                         iso_bytes=tuple(b * KIB for b in (4, 8, 16, 24, 32, 48, 64, 96, 128)),
                         bursts=24, warmup_bursts=10)


def synthetic_records(platform: Platform | None = None, plan: SyntheticPlan = SyntheticPlan()) -> list[dict]:
    """Records for the whole synthetic plan, deterministic for a given plan (seeded noise)."""
    platform = platform or known_platform()
    rng = np.random.default_rng(plan.seed)
    out: list[dict] = []
    for aligned in (True, False):
        for k in plan.producers:
            for b in plan.rfit_bytes:
                _add(out, "periodic", k, b, 0.0, aligned, platform, plan, rng)
        for k, b in plan.gap_configs:
            period0_us = drain_time_us(k * b, platform.drain_rate_gbps)  # the plan's P0, from V/R
            for frac in plan.gap_fracs[1:]:
                _add(out, "periodic", k, b, round(frac * period0_us, 3), aligned, platform, plan, rng)
    for k in plan.producers:
        for b in plan.iso_bytes:
            _add(out, "isolated", k, b, 20.0 + 3.0 * k * b / 2e5, True, platform, plan, rng)
    return out + _baselines(platform, rng, 0)


def write_jsonl(records: list[dict], path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, separators=(",", ":")) + "\n")
