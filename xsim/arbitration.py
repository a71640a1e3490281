"""Who wins the drain when the X-Stage is full: arbitration weights by SM, and their per-burst spread.

Measured on H200 (docs/calibration.md, "Tails"): under backpressure the share of the drain an SM
gets depends on *which SM* it is (the same SMs are fast on NVLink and on PCIe), not on the CTA's
rank, and the CTA -> SM placement of a launch depends on its grid size (K = 33 and 66 put one CTA
per TPC, K = 132 fills every SM). On top of that static order every burst re-draws who is
served first: the per-burst issue time of one producer varies by a log-std of 0.17 (NVLink) and
1.0 (PCIe host) around its own mean. So a producer p on SM s(p) gets, in burst j, the weight

    w[p, j] = sm_weights[s(p)] * f[p, j],   f = exp(sigma z - sigma^2 / 2), z ~ N(0, 1) (seeded)

A burst's share of the drain averages over the stores a CTA waits for, so with
``sigma_ref_bytes`` the spread falls as one over the square root of the CTA's backlog
``x = max(B - Q(K)/K, 0)`` (bytes it must see drained before its issue can end):
``sigma(x) = burst_sigma * sqrt(sigma_ref_bytes / max(x, sigma_ref_bytes / 4))``, ``burst_sigma``
being the value at the fitted point's backlog ``sigma_ref_bytes``.

The per-SM weights are measured as per-producer means over a few bursts of one trace; where
every burst re-draws the order (PCIe host: log-std 1.0 per burst, run-to-run correlation of the
means 0.03) most of their spread is that draw, not a property of the SM, and as static weights
they make free-running CTAs (which get no per-burst spread) twice as unequal as measured
(per-CTA period cv 0.25 vs 0.12 at K = 132 x 32 KiB, zero gap). ``weight_exponent`` e shrinks
the static part: an SM weighs ``sm_weights[s] ** e`` (1: as measured, 0: equal), e fitted with
the spread on the weight trace's own point (calibration/spread.py).

``placements`` holds the measured SM of every CTA per traced K; a K without a measured placement
uses the first K entries of the smallest traced K' >= K (else of the largest). Without
``sm_weights`` every SM weighs 1; ``burst_sigma = 0`` means no per-burst spread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np


CAPACITY_SHAPES = ("lognormal", "uniform")


class ArbitrationError(ValueError):
    """An arbitration model that is not valid."""


def _placements(value) -> tuple[tuple[int, tuple[int, ...]], ...]:
    items = value.items() if isinstance(value, Mapping) else (value or ())
    return tuple(sorted((int(k), tuple(int(s) for s in sms)) for k, sms in items))


@dataclass(frozen=True)
class Arbitration:
    sm_weights: tuple[float, ...] | None = None
    placements: tuple[tuple[int, tuple[int, ...]], ...] = ()
    burst_sigma: float = 0.0
    seed: int = 0
    sigma_ref_bytes: float | None = None
    group_sms: int = 1
    weight_exponent: float = 1.0
    burst_group_sms: int = 1
    capacity_sigma: float = 0.0
    capacity_shape: str = "lognormal"

    def __post_init__(self) -> None:
        if self.sm_weights is not None:
            w = tuple(float(x) for x in self.sm_weights)
            if not w or not all(math.isfinite(x) and x > 0 for x in w):
                raise ArbitrationError('"sm_weights" must be a non-empty list of finite numbers > 0')
            object.__setattr__(self, "sm_weights", w)
        object.__setattr__(self, "placements", _placements(self.placements))
        for k, sms in self.placements:
            if k < 1 or len(sms) != k:
                raise ArbitrationError(f'"placements" of K = {k} must name {k} SMs, got {len(sms)}')
            if self.sm_weights is not None and any(s < 0 or s >= len(self.sm_weights) for s in sms):
                raise ArbitrationError(f'"placements" of K = {k} names an SM without a weight')
        if not isinstance(self.burst_sigma, (int, float)) or not math.isfinite(self.burst_sigma) \
                or self.burst_sigma < 0:
            raise ArbitrationError(f'"burst_sigma" must be a finite number >= 0, got {self.burst_sigma!r}')
        if self.sigma_ref_bytes is not None and not (isinstance(self.sigma_ref_bytes, (int, float))
                                                     and math.isfinite(self.sigma_ref_bytes)
                                                     and self.sigma_ref_bytes > 0):
            raise ArbitrationError(f'"sigma_ref_bytes" must be a finite number > 0, got {self.sigma_ref_bytes!r}')
        if not isinstance(self.group_sms, int) or self.group_sms < 1:
            raise ArbitrationError(f'"group_sms" must be an integer >= 1, got {self.group_sms!r}')
        if not isinstance(self.capacity_sigma, (int, float)) or isinstance(self.capacity_sigma, bool) \
                or not math.isfinite(self.capacity_sigma) or self.capacity_sigma < 0:
            raise ArbitrationError(f'"capacity_sigma" must be a finite number >= 0, got {self.capacity_sigma!r}')
        if self.capacity_shape not in CAPACITY_SHAPES:
            raise ArbitrationError(f'"capacity_shape" must be one of {CAPACITY_SHAPES}, got {self.capacity_shape!r}')
        if self.capacity_shape == "uniform" and self.capacity_sigma * math.sqrt(3) >= 1:
            raise ArbitrationError(f'"capacity_sigma" of a uniform share must be < 1/sqrt(3), got {self.capacity_sigma!r}')
        if not isinstance(self.burst_group_sms, int) or isinstance(self.burst_group_sms, bool) \
                or self.burst_group_sms < 1:
            raise ArbitrationError(f'"burst_group_sms" must be an integer >= 1, got {self.burst_group_sms!r}')
        if not isinstance(self.weight_exponent, (int, float)) or isinstance(self.weight_exponent, bool) \
                or not math.isfinite(self.weight_exponent) or not 0 <= self.weight_exponent <= 1:
            raise ArbitrationError(f'"weight_exponent" must be a number in [0, 1], got {self.weight_exponent!r}')
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ArbitrationError(f'"seed" must be an integer >= 0, got {self.seed!r}')

    def placement(self, producers: int) -> tuple[int, ...]:
        """The SM of CTA 0..K-1 (measured for K, else a prefix of the nearest larger traced K)."""
        if not self.placements:
            return tuple(range(producers))
        table = dict(self.placements)
        if producers in table:
            return table[producers]
        larger = [k for k in table if k >= producers]
        base = table[min(larger)] if larger else table[max(table)]
        return tuple(base[p % len(base)] for p in range(producers))

    def weights_for(self, producers: int) -> list[float]:
        """Static weight of CTA 0..K-1: the weight of the SM it runs on (shrunk by ``weight_exponent``)."""
        if self.sm_weights is None:
            return [1.0] * producers
        sms = self.placement(producers)
        w = self.sm_weights
        if self.weight_exponent != 1.0:
            w = tuple(x ** self.weight_exponent for x in w)
        if self.group_sms == 1:
            return [w[s % len(w)] for s in sms]
        g = self.group_sms                         # the group's share, split among its active CTAs
        active: dict[int, int] = {}
        for s in sms:
            active[s // g] = active.get(s // g, 0) + 1
        share = {grp: sum(w[x % len(w)] for x in range(grp * g, grp * g + g)) / g for grp in active}
        return [share[s // g] * g / active[s // g] for s in sms]

    def sigma_for(self, backlog_bytes: float) -> float:
        """The per-burst log-spread for a CTA backlog of ``backlog_bytes`` (B - Q(K)/K)."""
        if self.sigma_ref_bytes is None or self.burst_sigma == 0:
            return self.burst_sigma
        x = max(backlog_bytes, 0.25 * self.sigma_ref_bytes)
        return self.burst_sigma * math.sqrt(self.sigma_ref_bytes / x)

    def burst_factors(self, producers: int, bursts: int, backlog_bytes: float | None = None) -> np.ndarray:
        """[K, bursts] per-burst weight factors, mean 1 (all ones when the spread is 0)."""
        sigma = self.burst_sigma if backlog_bytes is None else self.sigma_for(backlog_bytes)
        if sigma == 0:
            return np.ones((producers, bursts))
        return np.exp(sigma * self._draws(producers, bursts) - 0.5 * sigma ** 2)

    def _draws(self, producers: int, bursts: int) -> np.ndarray:
        """[K, bursts] seeded N(0, 1): one per CTA and burst, or one per SM group (``burst_group_sms``:
        2 = a TPC) and burst, shared by the group's CTAs."""
        rng = np.random.default_rng(self.seed)
        if self.burst_group_sms == 1:
            return rng.standard_normal((producers, bursts))
        group = np.asarray(self.placement(producers)) // self.burst_group_sms
        _, index = np.unique(group, return_inverse=True)
        return rng.standard_normal((int(index.max()) + 1, bursts))[index]

    def capacity_factors(self, producers: int, bursts: int) -> np.ndarray | None:
        """[K, bursts] factors on each CTA's equal capacity share Q(K)/K in one burst (None: no
        spread). The same draws z as the weights', decreasing in z: ``exp(-capacity_sigma z)``
        (``lognormal``) or ``1 + sqrt(3) capacity_sigma (1 - 2 Phi(z))`` (``uniform``: the same std,
        bounded, so no CTA's share falls below ``1 - sqrt(3) capacity_sigma``), normalised per burst
        to mean 1, so the burst's CTAs still share exactly Q(K). A CTA that holds more of the
        capacity this burst is drained with a lower weight (the coupling that fits the PCIe weight
        trace; the same sign and independent draws make its slowest CTA 2.6-2.9x too slow)."""
        if self.capacity_sigma == 0 or self.burst_sigma == 0:
            return None
        z = self._draws(producers, bursts)
        if self.capacity_shape == "uniform":
            from scipy.special import ndtr

            f = 1.0 + math.sqrt(3) * self.capacity_sigma * (1.0 - 2.0 * ndtr(z))
        else:
            f = np.exp(-self.capacity_sigma * z)
        return f / f.mean(axis=0, keepdims=True)

    def to_dict(self) -> dict[str, Any]:
        return {"sm_weights": None if self.sm_weights is None else list(self.sm_weights),
                "placements": {str(k): list(s) for k, s in self.placements},
                "burst_sigma": self.burst_sigma, "seed": self.seed, "sigma_ref_bytes": self.sigma_ref_bytes,
                "group_sms": self.group_sms,
                **({"weight_exponent": self.weight_exponent} if self.weight_exponent != 1.0 else {}),
                **({"burst_group_sms": self.burst_group_sms} if self.burst_group_sms != 1 else {}),
                **({"capacity_sigma": self.capacity_sigma, "capacity_shape": self.capacity_shape}
                   if self.capacity_sigma != 0 else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "Arbitration | None":
        if not data or all(data.get(k) in (None, {}, 0, 0.0) for k in ("sm_weights", "placements", "burst_sigma")):
            return None
        return cls(sm_weights=data.get("sm_weights"), placements=data.get("placements") or (),
                   burst_sigma=data.get("burst_sigma", 0.0), seed=data.get("seed", 0),
                   sigma_ref_bytes=data.get("sigma_ref_bytes"), group_sms=data.get("group_sms", 1),
                   weight_exponent=data.get("weight_exponent", 1.0),
                   burst_group_sms=data.get("burst_group_sms", 1),
                   capacity_sigma=data.get("capacity_sigma", 0.0),
                   capacity_shape=data.get("capacity_shape", "lognormal"))
