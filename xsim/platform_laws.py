"""The two laws of a platform profile: the issue time T_iss0(K, B[, threads]) and the capacity Q(K).

:class:`xsim.platform.Platform` holds one of each with the drain rate R; both validate their
numbers and raise :class:`ProfileError` (re-exported by :mod:`xsim.platform`).
"""

from __future__ import annotations

import math
import dataclasses
from dataclasses import dataclass

import numpy as np

from xsim.units import gbps_to_bytes_per_us


class ProfileError(ValueError):
    """A platform profile that cannot be read or is not valid."""


def _positive(name: str, value: float | None, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ProfileError(f'"{name}" must be a finite number > 0, got {value!r}')


def drain_rate_at(rate_ref_gbps: float, producers: int, half_producers: float, ref_producers: int) -> float:
    """R(K) = R_inf K/(K + K0), given as R at ``ref_producers`` (the profile's headline R):
    ``rate_ref * [K/(K + K0)] / [K_ref/(K_ref + K0)]``. Little's law: K producers keep about K times
    one SM's stores in flight, and below some K that no longer covers the path's latency (NVLink:
    aligned drain-limited V/T 336-348 GB/s at K = 16, 354-357 at K = 33, 365-371 at K = 132)."""
    if producers < 1:
        raise ValueError(f'"producers" must be >= 1, got {producers!r}')
    k, k0, ref = float(producers), float(half_producers), float(ref_producers)
    return rate_ref_gbps * (k / (k + k0)) * ((ref + k0) / ref)


@dataclass(frozen=True)
class IssueModel:
    """Backpressure-free burst issue time T_iss0(K, B).

    ``T_iss0 = t_fixed_us + min(B, fast_bytes) / fast_issue_gbps
               + [B - fast_bytes]+ * max(1 / producer_issue_gbps, K / aggregate_issue_gbps)``:
    a fixed per-burst cost; optionally, the first ``fast_bytes`` of each producer's burst at a
    faster rate (the SM's store buffer absorbing them: measured on H200, docs/calibration.md);
    then the rest at the producer's own store-issue rate unless the K producers together hit an
    aggregate injection ceiling. ``None`` rates are unlimited; without ``fast_bytes`` the model
    is the one-rate form ``t_fixed_us + B * max(1/producer, K/aggregate)``.

    Optionally a threads-per-CTA term (measured on H200: 256 threads issue 8 KiB 15-25 % faster
    than 128, 512 or 1024; docs/calibration.md): the model above is for ``threads_ref`` threads,
    and ``thread_terms`` holds ``(threads, extra_us, extra_us_per_kib)`` per measured thread
    count, added as ``extra_us + extra_us_per_kib * B / KiB``; between measured counts the terms
    are interpolated in log2(threads), outside them clamped. ``threads = None`` is the reference.

    ``free_running_factor`` (optional; None: 1): the issue time of a free-running microbenchmark
    burst is that factor times T_iss0. The law is fitted where every CTA starts its burst at once
    (isolated and aligned bursts, and free-running ones share the fit); free-running CTAs drift out
    of phase, and over NVLink a CTA that issues while few others do is 8-13 % faster on the
    recovered plateau (0.47 vs 0.54 us at 32 KiB; PCIe host: within +-7 %, no factor). A fixed
    factor stands for a dependence on how many CTAs issue at once that the DES does not follow.
    """

    t_fixed_us: float = 0.0
    producer_issue_gbps: float | None = None
    aggregate_issue_gbps: float | None = None
    fast_bytes: float | None = None
    fast_issue_gbps: float | None = None
    threads_ref: int | None = None
    thread_terms: tuple[tuple[int, float, float], ...] | None = None
    free_running_factor: float | None = None

    def __post_init__(self) -> None:
        if self.thread_terms is not None:
            terms = tuple(sorted((int(t), float(a), float(c)) for t, a, c in self.thread_terms))
            if not terms or any(t <= 0 or not (math.isfinite(a) and math.isfinite(c)) for t, a, c in terms):
                raise ProfileError('"thread_terms" must be (threads > 0, extra_us, extra_us_per_kib) triples')
            object.__setattr__(self, "thread_terms", terms)
        if (self.threads_ref is None) != (self.thread_terms is None):
            raise ProfileError('"threads_ref" and "thread_terms" must be given together')
        if not isinstance(self.t_fixed_us, (int, float)) or isinstance(self.t_fixed_us, bool) \
                or not math.isfinite(self.t_fixed_us) or not self.t_fixed_us >= 0:
            raise ProfileError(f'"t_fixed_us" must be a finite number >= 0, got {self.t_fixed_us!r}')
        _positive("producer_issue_gbps", self.producer_issue_gbps, allow_none=True)
        _positive("aggregate_issue_gbps", self.aggregate_issue_gbps, allow_none=True)
        _positive("fast_bytes", self.fast_bytes, allow_none=True)
        _positive("fast_issue_gbps", self.fast_issue_gbps, allow_none=True)
        if (self.fast_bytes is None) != (self.fast_issue_gbps is None):
            raise ProfileError('"fast_bytes" and "fast_issue_gbps" must be given together')
        if self.free_running_factor is not None and not (
                isinstance(self.free_running_factor, (int, float)) and not isinstance(self.free_running_factor, bool)
                and math.isfinite(self.free_running_factor) and 0 < self.free_running_factor <= 2):
            raise ProfileError(f'"free_running_factor" must be a number in (0, 2], got {self.free_running_factor!r}')

    def thread_extra_us(self, threads: int | None, burst_bytes: float) -> float:
        """The threads-per-CTA term at ``threads`` (0 for the reference count or without terms)."""
        if threads is None or self.thread_terms is None or threads == self.threads_ref:
            return 0.0
        ts = [math.log2(t) for t, _, _ in self.thread_terms]
        x = min(max(math.log2(threads), ts[0]), ts[-1])
        extra = float(np.interp(x, ts, [a for _, a, _ in self.thread_terms]))
        per_kib = float(np.interp(x, ts, [c for _, _, c in self.thread_terms]))
        return extra + per_kib * burst_bytes / 1024.0

    def t_iss0_us(self, producers: int, burst_bytes: float, threads: int | None = None) -> float:
        """Backpressure-free issue time of a burst of ``producers`` x ``burst_bytes`` (at
        ``threads`` threads per producer; None: the reference count)."""
        base = self._t_iss0_ref_us(producers, burst_bytes)
        extra = self.thread_extra_us(threads, burst_bytes)
        return base if extra == 0.0 else max(base + extra, 1e-3 * base)

    def _t_iss0_ref_us(self, producers: int, burst_bytes: float) -> float:
        us_per_byte = 0.0
        if self.producer_issue_gbps is not None:
            us_per_byte = 1.0 / gbps_to_bytes_per_us(self.producer_issue_gbps)
        if self.aggregate_issue_gbps is not None:
            us_per_byte = max(us_per_byte, producers / gbps_to_bytes_per_us(self.aggregate_issue_gbps))
        if self.fast_bytes is None:
            return self.t_fixed_us + burst_bytes * us_per_byte
        fast = min(burst_bytes, self.fast_bytes)
        return (self.t_fixed_us + fast / gbps_to_bytes_per_us(self.fast_issue_gbps)
                + (burst_bytes - fast) * us_per_byte)


@dataclass(frozen=True)
class CapacityModel:
    """Effective outstanding capacity Q(K) = min(shared_bytes + per_producer_bytes * K**exponent, max_bytes).

    Either bound may be ``None`` (absent); at least one must be given. ``shared_bytes`` (default
    0) is a part of the capacity that does not scale with the producers (measured on H200:
    Q(K) is affine in K over NVLink, docs/calibration.md); it needs ``per_producer_bytes``.
    ``exponent`` (default None: 1, the linear law) makes the producers' part a power law,
    concave for exponent < 1 (over PCIe the knees grow by about the same amount per doubling
    of K: each added CTA gets less staging, docs/calibration.md "Capacity"); it needs
    ``per_producer_bytes`` (then the bytes of one producer).
    """

    max_bytes: float | None = None
    per_producer_bytes: float | None = None
    shared_bytes: float | None = None
    exponent: float | None = None

    def __post_init__(self) -> None:
        if self.max_bytes is None and self.per_producer_bytes is None:
            raise ProfileError('capacity needs "max_bytes" or "per_producer_bytes"')
        _positive("max_bytes", self.max_bytes, allow_none=True)
        _positive("per_producer_bytes", self.per_producer_bytes, allow_none=True)
        if self.shared_bytes is not None:
            if self.per_producer_bytes is None:
                raise ProfileError('"shared_bytes" needs "per_producer_bytes"')
            if not isinstance(self.shared_bytes, (int, float)) or isinstance(self.shared_bytes, bool) \
                    or not math.isfinite(self.shared_bytes) \
                    or self.shared_bytes < 0:
                raise ProfileError(f'"shared_bytes" must be a finite number >= 0, got {self.shared_bytes!r}')
        if self.exponent is not None:
            if self.per_producer_bytes is None:
                raise ProfileError('"exponent" needs "per_producer_bytes"')
            if not isinstance(self.exponent, (int, float)) or isinstance(self.exponent, bool) \
                    or not math.isfinite(self.exponent) or not 0 < self.exponent <= 2:
                raise ProfileError(f'"exponent" must be a number in (0, 2], got {self.exponent!r}')

    def capacity_bytes(self, producers: int) -> float:
        bounds = [b for b in (self.max_bytes,) if b is not None]
        if self.per_producer_bytes is not None:
            scaled = producers if self.exponent is None else float(producers) ** self.exponent
            bounds.append((self.shared_bytes or 0.0) + scaled * self.per_producer_bytes)
        return min(bounds)

    def to_dict(self) -> dict:
        """The profile's ``capacity`` object (``exponent`` only when set: older profiles unchanged)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "exponent" or v is not None}
