"""The fa-a2a experiment's measured points: records grouped into series and sequence lengths.

Records (experiment "fa-a2a", one per variant and M; ``hwkernels/fa.py`` writes them) are grouped
into series by tile shape, destination and attention kernel (:data:`SERIES_KEYS`; ``mainloop``:
``hwkernels/fa_kernels.py``'s Triton forward or ``fa_gluon.py``'s), and within a series by sequence
length M (:class:`Point`: the measured medians of ``kernel_us`` per column, the FA-only Q-loop and
the fused issue span; :mod:`xsim.report.fa_a2a` adds each model's predictions).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from calibration.records import RecordSet
from xsim.attention.predict import FaA2aPrediction
from xsim.attention.qloop import QLoop
from xsim.attention.shape import AttentionShape
from xsim.builders import fa_a2a as builder
from xsim.spread import P10_P90_SIGMAS, spread_cv

KINDS = ("fa-only", "sdpa-cudnn", "a2a-store", "a2a-ce", "serial", "fused", "fused-paced", "cc")
STAMPED = ("fa-only", "fused", "fused-paced", "cc")   # the kinds whose SM clock their own stamps measured
# The kinds the models predict, and the name of each in a prediction's keys ("fused_us", "paced_mhz", ...).
PREDICTED = (("fused", "fused"), ("cc", "cc"), ("fused-paced", "paced"))
SERIES_KEYS = ("head_dim", "block_m", "block_n", "sp", "destination", "mainloop", "stagger_us", "timing")
# records before the Gluon mainloop name none: fa_kernels'; before fa_bench --steady-s no timing: a short
# launch after the checks' idle gap ("burst"; "steady": after the same rings ran on, power-capped)
KEY_DEFAULTS = {"mainloop": "triton", "stagger_us": 0.0, "timing": "burst"}


@dataclass
class Point:
    """One sequence length of one series: what was measured and what each model predicts."""

    seq_len: int
    shape: AttentionShape
    measured: dict                      # kind -> median kernel_us
    qloop_us: float = math.nan          # FA-only median per-tile Q-loop time
    qloop_cv: float = math.nan          # FA-only per-tile Q-loop spread (coefficient of variation)
    qloop_wave_cv: float = math.nan     # the same between the programs of one wave (records since run 10)
    issue_span_us: float = math.nan     # fused median per-tile issue span
    closed_form: FaA2aPrediction | None = None
    predicted: dict = field(default_factory=dict)   # model -> {"fused_us", "cc_us", "e_res_us", "e_cc_us"}
    floor_us: float = math.nan
    floor_predicted_us: float = math.nan   # the models' issue floor: T_iss0 x remote waves
    pace: int = 0                       # fused-paced: the record's row chunks per tile
    clock_mhz: dict = field(default_factory=dict)   # stamped kind -> SM clock of its instrumented runs
    run_clock_mhz: dict = field(default_factory=dict)   # kind -> median SM clock of its timed runs (CLK)
    where: list = field(default_factory=list)

    def get(self, kind: str) -> float:
        return self.measured.get(kind, math.nan)

    @property
    def e_res_us(self) -> float:
        return self.get("fused") - self.get("fa-only")

    @property
    def e_cc_us(self) -> float:
        return self.get("cc") - self.get("fa-only")

    @property
    def hiding(self) -> float:
        """Eq. 21: H = 1 - (T_fused - T_FA) / (T_serial - T_FA) (NaN if serial is not slower)."""
        exposed = self.get("serial") - self.get("fa-only")
        return 1.0 - self.e_res_us / exposed if exposed > 0 else math.nan

    @property
    def paced_over_fa(self) -> float:
        """fused-paced (stores spread over the next Q-loop, hwkernels) over FA-only (NaN if absent)."""
        return self.get("fused-paced") / self.get("fa-only")

    @property
    def paced_hiding(self) -> float:
        """Eq. 21 with the fused-paced kernel in place of fused."""
        exposed = self.get("serial") - self.get("fa-only")
        return 1.0 - (self.get("fused-paced") - self.get("fa-only")) / exposed if exposed > 0 else math.nan

    def clock(self, kind: str) -> float:
        """``kind``'s SM clock: of its timed runs where the records carry it (``run_clock_mhz``,
        the Gluon kernel's CLK sums), else of its stamped run (NaN: neither)."""
        return self.run_clock_mhz.get(kind, self.clock_mhz.get(kind, math.nan))

    @property
    def fused_clock_over_fa(self) -> float:
        """The fused kernel's SM clock over FA-only's: more than 2 % (the DVFS band) above 1, the
        fused kernel ran faster clocked (a power cap lowers the clock of the busier kernel), so
        part of E_res, or all of a negative one, is DVFS, not the link (NaN without both)."""
        return self.clock("fused") / self.clock("fa-only")

    def fa_at_clock_of(self, kind: str) -> float:
        """FA-only's time at ``kind``'s SM clock, T_FA f_FA / f_kind: as if all of FA-only's time
        scaled with the clock (its memory-bound part does not), so E_res against it is DVFS-free
        to first order (NaN without both clocks)."""
        return self.get("fa-only") * self.clock("fa-only") / self.clock(kind)

    def at_fa_clock(self, kind: str) -> float:
        """``kind``'s time at FA-only's SM clock, T_kind f_kind / f_FA: what a model without DVFS,
        whose Q-loop is FA-only's, predicts for it (NaN without both clocks)."""
        return self.get(kind) * self.clock(kind) / self.clock("fa-only")

    def over_fa_at_clock(self, kind: str) -> float:
        """T_kind over FA-only at the same clock (:meth:`fa_at_clock_of`)."""
        return self.get(kind) / self.fa_at_clock_of(kind)

    def hiding_at_clock(self, kind: str) -> float:
        """Eq. 21 at one clock: 1 - (T_kind - T_FA at its clock) / T_A2A, exposed time the A2A
        store kernel's own (serial - FA-only carries both kernels' clock gap too)."""
        a2a = self.get("a2a-store")
        return 1.0 - (self.get(kind) - self.fa_at_clock_of(kind)) / a2a if a2a > 0 else math.nan

    @property
    def speedup(self) -> float:
        return self.get("serial") / self.get("fused")

    @property
    def fused_over_fa(self) -> float:
        return self.get("fused") / self.get("fa-only")

    @property
    def fa_vs_cudnn(self) -> float:
        """cuDNN time over ours: >= 1 means our FA-only is at least as fast."""
        return self.get("sdpa-cudnn") / self.get("fa-only")


@dataclass
class Series:
    key: dict
    points: list[Point]
    qloop: QLoop | None
    summary: dict = field(default_factory=dict)


def _shape(params) -> AttentionShape:
    return AttentionShape(seq_len=int(params["seq_len"]), batch=int(params["batch"]), heads=int(params["heads"]),
                          sp=int(params["sp"]), head_dim=int(params["head_dim"]), block_m=int(params["block_m"]),
                          block_n=int(params["block_n"]), producers=int(params["producers"]))


def column(record) -> str:
    """The measured column of a record: its kind, except that the completion-coupled kind "cc"
    is split by its fence: "cc" is the system-scope fence (FA_CONTRACT.md's counterfactual),
    "cc-<fence>" any other (e.g. a release atomic)."""
    fence = record.params.get("fence")
    if record.kind == "cc" and fence not in (None, "asm"):
        return f"cc-{fence}"
    return record.kind


def series_key(params: dict) -> tuple:
    """The series a record belongs to: its values of :data:`SERIES_KEYS` (defaults where absent)."""
    return tuple(params.get(k, KEY_DEFAULTS.get(k)) for k in SERIES_KEYS)


def collect(rs: RecordSet, notes: list[str]) -> dict:
    """Series key -> {M: Point}; the last record of a (series, M, kind) wins (noted)."""
    series: dict = defaultdict(dict)
    for r in rs.select("fa-a2a"):
        if r.kind not in KINDS:
            notes.append(f"{r.where}: unknown fa-a2a kind {r.kind!r} left out")
            continue
        key = series_key(r.params)
        m = int(r.params["seq_len"])
        kind = column(r)
        point = series[key].get(m)
        if point is None:
            point = series[key][m] = Point(m, _shape(r.params), {})
        elif kind in point.measured:
            notes.append(f"{r.where}: repeats {kind} at M = {m}; the later record is used")
        point.measured[kind] = r.stat("kernel_us", "median")
        mhz = r.data.get("platform", {}).get("sm_clock_mhz")
        if kind in STAMPED and mhz:
            point.clock_mhz[kind] = float(mhz)
        run_mhz = r.stat("run_clock_mhz", "median")
        if math.isfinite(run_mhz):
            point.run_clock_mhz[kind] = run_mhz
        point.where.append(r.where)
        if r.kind == "fa-only":
            point.qloop_us = r.stat("qloop_us", "median")
            point.qloop_cv = spread_cv(r.stat("qloop_us", "p10"), r.stat("qloop_us", "p90"), r.stat("qloop_us", "mean"))
            point.qloop_wave_cv = r.stat("qloop_wave_spread", "median") / P10_P90_SIGMAS
        if r.kind == "fused-paced":
            if r.params.get("pace_spread", True) and r.params.get("tile_order", "remote-first") == "remote-first":
                point.pace = int(r.params.get("pace_chunks", builder.PARAMS["pace"].default))
            else:
                notes.append(f"{r.where}: fused-paced with consecutive chunks or the default order is not modeled")
        if r.kind == "fused":
            point.issue_span_us = r.stat("issue_span_us", "median")
            point.shape = _shape(r.params)
    return series
