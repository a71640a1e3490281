"""The SM clock at the power cap: a kernel whose SMs wait part of the time runs at a higher clock.

At the 700 W cap of an H200 the clock follows the SMs' busy fraction u (the time the kernel's
programs compute over the wall time): the controller holds the board's power, so fewer busy SMs
buy a higher clock, up to a ceiling the compute phases reach when the power is under the cap.
Measured on FA-only itself with gaps of A2A store launches after every launch (``hwkernels.fa_duty``,
records of experiment "power"; ``calibration.power`` fits the law):

    f(u) = min(f_ceiling(M), f_ref (u_ref / u) ** beta)

in ratio form, anchored on a kernel whose clock is measured: FA-only's (f_ref, u_ref). A fused kernel
of the same tiles computes the same work in a longer time T, so its busy fraction is u_FA T_compute / T
and the ratio u_FA / u_fused = T / T_compute, where T_compute = T_FA f_FA / f is FA-only's time at the
fused kernel's clock (FA-only's cycles are constant over clocks: docs/fa-a2a.md, "Run 12"). The clock
and the time depend on each other; :func:`solve` finds both by fixed-point iteration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _at(points: tuple[tuple[int, float], ...], seq_len: int) -> float:
    """(M, MHz) points interpolated in log M, held past the ends."""
    pts = sorted(points)
    x = math.log2(seq_len)
    if x <= math.log2(pts[0][0]):
        return pts[0][1]
    for (m0, f0), (m1, f1) in zip(pts, pts[1:]):
        x0, x1 = math.log2(m0), math.log2(m1)
        if x <= x1:
            return f0 + (f1 - f0) * (x - x0) / (x1 - x0)
    return pts[-1][1]


@dataclass(frozen=True)
class ClockLaw:
    """``beta``: the clock's exponent in 1 / u under the cap; ``ceilings``: (M, MHz) of the FA kernel's
    compute clock with the power under the cap; ``anchors``: (M, MHz) of FA-only's own clock at the cap,
    the duty runs' kernel alone (what a what-if without a measured FA-only clock anchors on; both
    interpolated in log M, held past the ends)."""

    beta: float
    ceilings: tuple[tuple[int, float], ...]
    source: str = ""
    anchors: tuple[tuple[int, float], ...] = ()

    def __post_init__(self):
        if not (math.isfinite(self.beta) and self.beta >= 0):
            raise ValueError(f'"beta" must be a finite number >= 0, got {self.beta!r}')
        if not self.ceilings or any(m <= 0 or not (f > 0) for m, f in self.ceilings):
            raise ValueError("a clock law needs ceilings (M > 0, MHz > 0)")
        if any(m <= 0 or not (f > 0) for m, f in self.anchors):
            raise ValueError("a clock law's anchors need M > 0, MHz > 0")

    def ceiling_mhz(self, seq_len: int) -> float:
        return _at(self.ceilings, seq_len)

    def anchor_mhz(self, seq_len: int) -> float:
        """FA-only's clock at the cap at ``seq_len`` (ValueError: a law fitted without anchors)."""
        if not self.anchors:
            raise ValueError("the clock law has no FA-only anchors (duty records of gap_kind none): "
                             "give FA-only's clock (fa_clock_mhz)")
        return _at(self.anchors, seq_len)

    def clock_mhz(self, f_ref: float, busy_ratio: float, seq_len: int) -> float:
        """The clock of a kernel whose busy fraction is the reference's over ``busy_ratio`` (never below
        the reference's own: a kernel that waits more never clocks lower)."""
        return max(f_ref, min(self.ceiling_mhz(seq_len), f_ref * max(busy_ratio, 1.0) ** self.beta))

    def to_dict(self) -> dict:
        return {"beta": self.beta, "ceilings_mhz": {str(m): f for m, f in sorted(self.ceilings)},
                "anchors_mhz": {str(m): f for m, f in sorted(self.anchors)}, "source": self.source}


MAX_ITER = 8   # solve's iterations at most (2-4 in practice: docs/fa-a2a-report.md)


def solve(law: ClockLaw, t_fa_us: float, f_fa_mhz: float, seq_len: int, residual_us,
          tol: float = 1e-4, max_iter: int = MAX_ITER) -> tuple[float, float]:
    """(predicted time, predicted clock) of a kernel that computes FA-only's work plus a residual.

    ``residual_us(s)``: the model's residual over FA-only when the compute runs ``s`` = f_FA / f times
    FA-only's time (the DES with every Q-loop scaled by s). The time is T_FA s + residual(s); the clock
    the law gives for the busy ratio T / (T_FA s). The time and the clock returned are of the same
    ``s``, the last one ``residual_us`` was called with."""
    if max_iter < 1:
        raise ValueError(f'"max_iter" must be >= 1, got {max_iter!r}')
    s = 1.0
    for i in range(max_iter):
        t = t_fa_us * s + residual_us(s)
        s_next = f_fa_mhz / law.clock_mhz(f_fa_mhz, t / (t_fa_us * s), seq_len)
        if abs(s_next - s) < tol or i == max_iter - 1:
            return t, f_fa_mhz / s
        s = s_next
