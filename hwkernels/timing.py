"""Turn the burst-store kernel's raw stamps into times (pure numpy, no GPU).

Each SM's clock64 stamps are mapped onto the global ns timeline through the two
%globaltimer edges the kernel records per CTA (kernel start and end):
    t_ns(c) = edge0_ns + (c - edge0_clk) / f,   f = (edge1_clk - edge0_clk) / (edge1_ns - edge0_ns)
so spans keep clock64's resolution and stamps of different SMs share one time axis.
"""

from dataclasses import dataclass

import numpy as np

STAMP_CLK_START, STAMP_CLK_END, STAMP_NS_START, STAMP_NS_END = range(4)
INFO_NS0, INFO_CLK0, INFO_NS1, INFO_CLK1, INFO_SMID = range(5)


@dataclass(frozen=True)
class BurstTimes:
    """One kernel run's times, per producer p and burst j (arrays [K, N], microseconds)."""

    start_us: np.ndarray   # issue start on the global timeline, relative to the earliest start
    end_us: np.ndarray     # issue end, same axis
    issue_us: np.ndarray   # end - start, from clock64 on the producer's own SM
    clock_ghz: np.ndarray  # [K] SM clock rate measured over the kernel
    smid: np.ndarray       # [K] SM each producer ran on


def burst_times(stamps: np.ndarray, info: np.ndarray) -> BurstTimes:
    """stamps: int64 [K, N, 4] (clk start, clk end, ns start, ns end); info: int64 [K, 8]."""
    stamps = np.asarray(stamps, dtype=np.int64)
    info = np.asarray(info, dtype=np.int64)
    if stamps.ndim != 3 or stamps.shape[2] < 2:
        raise ValueError('"stamps" must have shape [K, N, 4].')
    if info.shape[0] != stamps.shape[0]:
        raise ValueError('"info" must have one row per producer.')
    d_ns = (info[:, INFO_NS1] - info[:, INFO_NS0]).astype(np.float64)
    d_clk = (info[:, INFO_CLK1] - info[:, INFO_CLK0]).astype(np.float64)
    if np.any(d_ns <= 0) or np.any(d_clk <= 0):
        raise ValueError("kernel clock edges are not increasing")
    ghz = d_clk / d_ns
    clk0 = info[:, INFO_CLK0][:, None]
    # %globaltimer counts ns since the epoch (~1.8e18): a float64 there has a 256 ns ulp,
    # so subtract in integers first.
    ns0 = (info[:, INFO_NS0] - info[:, INFO_NS0].min())[:, None].astype(np.float64)
    f = ghz[:, None]
    start_ns = ns0 + (stamps[:, :, STAMP_CLK_START] - clk0) / f
    end_ns = ns0 + (stamps[:, :, STAMP_CLK_END] - clk0) / f
    origin = start_ns.min()
    issue_us = (stamps[:, :, STAMP_CLK_END] - stamps[:, :, STAMP_CLK_START]) / f / 1e3
    return BurstTimes(
        start_us=(start_ns - origin) / 1e3,
        end_us=(end_ns - origin) / 1e3,
        issue_us=issue_us,
        clock_ghz=ghz,
        smid=info[:, INFO_SMID].copy(),
    )


def issue_samples(t: BurstTimes, warmup: int) -> np.ndarray:
    """Per (producer, burst) issue spans after the warm-up bursts, microseconds."""
    return t.issue_us[:, warmup:].ravel()


def burst_issue_samples(t: BurstTimes, warmup: int) -> np.ndarray:
    """Per burst: first producer's start to last producer's end, microseconds."""
    return (t.end_us.max(axis=0) - t.start_us.min(axis=0))[warmup:]


def issue_max_samples(t: BurstTimes, warmup: int) -> np.ndarray:
    """Per burst after the warm-up: the longest producer's issue span (the slowest CTA), us."""
    return t.issue_us[:, warmup:].max(axis=0)


def period_samples(t: BurstTimes, warmup: int) -> np.ndarray:
    """Per producer: start(j+1) - start(j) for j >= warmup, microseconds."""
    return np.diff(t.start_us, axis=1)[:, warmup:].ravel()


def gap_samples(t: BurstTimes, warmup: int) -> np.ndarray:
    """Per producer: end(j) .. start(j+1), the realised gap (spin + barrier wait), us."""
    return (t.start_us[:, 1:] - t.end_us[:, :-1])[:, warmup:].ravel()


def distinct_sms(t: BurstTimes) -> bool:
    """True when every producer ran on its own SM (co-residency, one CTA per SM)."""
    return len(set(t.smid.tolist())) == t.smid.size
