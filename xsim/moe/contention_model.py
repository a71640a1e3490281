"""The MoE tile table under shared HBM (:mod:`xsim.moe.contention`): bytes, calibration, mainloops.

**Bytes per tile** (the shape's, no measurement): a Linear-1 tile reads its weight slice
``hidden x 2 block_n1`` (gate and up; block: kind, expert, n-block), a Linear-2 tile
``intermediate x block_n2`` of w2; a weight slice read by mainloops running at the same
instant is read once (the contention module's rule: m-blocks of one expert side by side).
Activations: an m-block's valid rows (``valid x hidden`` for Linear-1, ``valid x
intermediate`` of the Linear-1 output for Linear-2) are read from HBM once for all of its
n-block tiles (they stay in the 50 MB L2 cache while the m-block's tiles run; the Linear-1
output was just written), so each tile is charged ``1 / n-blocks`` of them, whenever it runs.
(Charging them only to tiles running at the same instant made a tile that fell out of step
with its m-block read them alone, and stay out of step: whole streams 1.8x slower on mimo.)
Elements of the precision's size; stores cost no bandwidth.

**Calibration, once** (:func:`calibrate_compute_us`): ``hbm`` is the H200's sustained HBM
bandwidth the roofline already uses (4.3 TB/s, :data:`xsim.moe.compute.ROOFLINE_PEAKS`: a
spec figure, not fitted). A tile's tensor-core time ``compute_us`` per (precision, block_m,
block_n, kind, hidden, intermediate) comes from the GEMM-only records (one expert, one tile
kind on all 132 SMs, grouped raster order, every row valid): the time that makes the
simulated GEMM-only run's mean mainloop equal the measured mean (bisection; where the run is
compute-bound, as the grouped order makes it, that is the measured mean itself), averaged
over the records' row counts. No fused or kernel record enters it.

:func:`local_mainloops` runs a schedule's table with the fixed per-tile costs of the compute
model (the DES's own: the bookkeeping and wait before the mainloop, the epilogues, the local
Combine issue, the prologue) and returns each tile's mainloop in context.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass

import numpy as np

from xsim.moe.compute import ROOFLINE_PEAKS
from xsim.moe.contention import ContentionResult, ContentionTiles, simulate
from xsim.moe.shapes import MoEShape
from xsim.moe.tiles import EXPERT, KIND, L1, L2, MBLOCK, NBLOCK, TileTable
from xsim.params import ParamError
from xsim.spread import spread_cv
from xsim.units import tbps_to_bytes_per_us

HBM_TBPS = ROOFLINE_PEAKS["h200"]["hbm_tbps"]
GEMM_ONLY = "gemm-only"
GROUP_M = 8   # the GEMM-only tables' raster group (hwkernels/moe_gemm.py)


@dataclass(frozen=True)
class FixedCosts:
    """A tile's fixed costs around its mainloop, us: before it (per kind), after it (per kind;
    a Linear-2 tile's Combine issue is added per tile), before each program's first tile."""

    pre_l1_us: float = 0.0
    pre_l2_us: float = 0.0
    post_l1_us: float = 0.0
    post_l2_us: float = 0.0
    prologue_us: float = 0.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not value >= 0:
                raise ValueError(f'"{name}" must be >= 0, got {value!r}')


def tile_bytes(shape: MoEShape, table: TileTable, valid_rows: np.ndarray):
    """(w_bytes, w_block, a_bytes, a_block) per tile of the table (see the module docstring)."""
    kind, m = table.tiles[:, KIND].astype(np.int64), table.tiles[:, MBLOCK].astype(np.int64)
    expert, n = table.tiles[:, EXPERT].astype(np.int64), table.tiles[:, NBLOCK].astype(np.int64)
    eb, l1 = shape.element_bytes, kind == L1
    k_dim = np.where(l1, shape.hidden, shape.intermediate)
    w_bytes = np.where(l1, shape.l1_tile_weight_bytes(), shape.l2_tile_weight_bytes()).astype(float)
    nblocks = np.where(l1, shape.l1_nblocks, shape.l2_nblocks)
    a_bytes = (np.asarray(valid_rows, dtype=np.int64)[m] * k_dim * eb / nblocks).astype(float)
    n_max = max(shape.l1_nblocks, shape.l2_nblocks)
    n_experts = int(expert.max(initial=0)) + 1
    w_block = (kind * n_experts + expert) * n_max + n
    a_block = np.arange(len(kind))   # amortized already: no further sharing
    return w_bytes, w_block, a_bytes, a_block


SHARES = ("fair", "inflight")
ANCHORS = ("mean", "ratio", "schedule", "none")
SPREADS = ("compute", "work")


def share_weights(shape: MoEShape, kind: np.ndarray, share: str) -> np.ndarray:
    """Each tile's weight in the water-fill: ``fair`` 1 (max-min fair per SM); ``inflight`` the
    bytes one pipeline stage keeps in flight, ``(block_m + B columns) x block_k``, per unit of
    block_k (it assumes one block_k and stage count for both kinds, which the fp8 kernel of
    56dc885 no longer has: block_k2 = 256 in 3 stages): a saturated memory system serves each SM
    in proportion to its outstanding loads (Little's law)."""
    if share not in SHARES:
        raise ValueError(f'"share" must be one of {", ".join(SHARES)}, got {share!r}')
    if share == "fair":
        return np.ones(len(kind))
    return np.where(kind == L1, shape.block_m + 2 * shape.block_n1, shape.block_m + shape.block_n2).astype(float)


def moe_tiles(table: TileTable, shape: MoEShape, valid_rows: np.ndarray, compute_us: np.ndarray,
              costs: FixedCosts, l2_issue_us: np.ndarray | None = None, share: str = "fair") -> ContentionTiles:
    """The table as contention tiles: L1 tiles signal ``l2_full[m]``, L2 tiles wait for it."""
    kind, m = table.tiles[:, KIND].astype(np.int64), table.tiles[:, MBLOCK].astype(np.int64)
    offsets = table.offsets.astype(np.int64)
    pre = np.where(kind == L1, costs.pre_l1_us, costs.pre_l2_us).astype(float)
    firsts = offsets[:-1][np.diff(offsets) > 0]
    pre[firsts] += costs.prologue_us
    post = np.where(kind == L1, costs.post_l1_us, costs.post_l2_us).astype(float)
    if l2_issue_us is not None:
        post = post + np.where(kind == L2, l2_issue_us, 0.0)
    w_bytes, w_block, a_bytes, a_block = tile_bytes(shape, table, valid_rows)
    return ContentionTiles(offsets=offsets, pre_us=pre, compute_us=np.asarray(compute_us, dtype=float),
                           post_us=post, w_bytes=w_bytes, w_block=w_block, a_bytes=a_bytes, a_block=a_block,
                           wait_counter=np.where(kind == L2, m, -1), wait_value=np.where(kind == L2, table.l1_nblocks, 0),
                           signal_counter=np.where(kind == L1, m, -1), n_counters=table.n_mblocks,
                           weight=share_weights(shape, kind, share))


def local_mainloops(table: TileTable, shape: MoEShape, valid_rows: np.ndarray, compute_l1_us: float,
                    compute_l2_us: float, costs: FixedCosts, hbm_tbps: float = HBM_TBPS,
                    factors: np.ndarray | None = None, l2_issue_us: np.ndarray | None = None,
                    share: str = "fair", bytes_scale: np.ndarray | None = None) -> ContentionResult:
    """The local run of ``table``: each tile's tensor-core time by kind (times ``factors``, one per
    tile, if given), its bytes (times ``bytes_scale``), the fixed costs, the mainloops sharing
    ``hbm_tbps``."""
    compute = np.where(table.tiles[:, KIND] == L1, compute_l1_us, compute_l2_us).astype(float)
    if factors is not None:
        compute = compute * np.asarray(factors, dtype=float)
    tiles = moe_tiles(table, shape, valid_rows, compute, costs, l2_issue_us, share)
    if bytes_scale is not None:
        tiles = ContentionTiles(**{**vars(tiles), "w_bytes": tiles.w_bytes * bytes_scale,
                                   "a_bytes": tiles.a_bytes * bytes_scale})
    return simulate(tiles, tbps_to_bytes_per_us(hbm_tbps))


def gemm_only_table(kind: int, n_mblocks: int, nblocks: int, l1_nblocks: int, n_streams: int) -> TileTable:
    """One expert's tiles of one kind in the GEMM-only runs' order: groups of GROUP_M m-blocks,
    n-blocks outer and m-blocks inner inside a group, dealt round-robin over the streams."""
    order = [(m, n) for g in range(0, n_mblocks, GROUP_M) for n in range(nblocks)
             for m in range(g, min(g + GROUP_M, n_mblocks))]
    tiles = np.array([(kind, 0, m, n) for m, n in order], dtype=np.int32)
    streams = [tiles[s::n_streams] for s in range(min(n_streams, len(tiles)))]
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in streams])]).astype(np.int32)
    return TileTable(offsets, np.concatenate(streams), l1_nblocks, 1 if kind == L1 else nblocks, n_mblocks)


def gemm_only_mean_us(shape: MoEShape, kind: int, rows: int, compute_us: float, hbm_tbps: float,
                      n_streams: int) -> float:
    """The simulated GEMM-only run's mean mainloop (``rows`` valid rows, no dependencies)."""
    n_mb = -(-rows // shape.block_m)
    nblocks = shape.l1_nblocks if kind == L1 else shape.l2_nblocks
    table = gemm_only_table(kind, n_mb, nblocks, shape.l1_nblocks, n_streams)
    valid = np.minimum(rows - np.arange(n_mb) * shape.block_m, shape.block_m)
    tiles = moe_tiles(table, shape, valid, np.full(table.n_tiles, compute_us), FixedCosts())
    tiles = ContentionTiles(**{**vars(tiles), "wait_counter": np.full(table.n_tiles, -1),
                               "signal_counter": np.full(table.n_tiles, -1)})
    return float(simulate(tiles, tbps_to_bytes_per_us(hbm_tbps)).mainloop_us.mean())


def is_gemm_only(record: dict) -> bool:
    """A checked GEMM-only mainloop record: what the calibration (and so the pre-pass) can use."""
    return (record.get("kind") == "mainloop" and record.get("params", {}).get("source") == GEMM_ONLY
            and record.get("check", {}).get("ok", False))


def calibrate_compute_us(records: list[dict], hbm_tbps: float = HBM_TBPS, n_streams: int = 132) -> dict:
    """(precision, block_m, block_n, kind, hidden, intermediate) -> tensor-core us per tile, from
    the checked GEMM-only mainloop records (the module docstring)."""
    ones = tuple(json.dumps({"params": r.get("params"), "mean": r["stats"]["mainloop_us"]["mean"]}, sort_keys=True)
                 for r in records if is_gemm_only(r))
    return dict(_calibrate(ones, float(hbm_tbps), int(n_streams)))


@functools.lru_cache(maxsize=16)
def _calibrate(records: tuple[str, ...], hbm_tbps: float, n_streams: int) -> tuple:
    groups: dict[tuple, list[float]] = {}
    for text in records:
        rec = json.loads(text)
        p = rec["params"]
        shape = MoEShape(hidden=int(p["hidden"]), intermediate=int(p["intermediate"]), experts=1, topk=1,
                         tokens=int(p["m"]), precision=p["precision"], block_m=int(p["block_m"]),
                         block_n1=int(p["block_n"]) if p["kind"] == "l1" else 128,
                         block_n2=int(p["block_n"]) if p["kind"] == "l2" else 128)
        kind = L1 if p["kind"] == "l1" else L2
        measured = float(rec["mean"])
        try:
            compute = _invert(lambda c: gemm_only_mean_us(shape, kind, int(p["m"]), c, hbm_tbps, n_streams), measured)
        except ValueError as exc:
            raise ValueError(f"{exc} ({hbm_tbps} TB/s; record {p['precision']} {p['kind']} hidden {p['hidden']} "
                             f"intermediate {p['intermediate']} m {p['m']})") from None
        key = (p["precision"], int(p["block_m"]), int(p["block_n"]), p["kind"], int(p["hidden"]), int(p["intermediate"]))
        groups.setdefault(key, []).append(compute)
    return tuple((key, float(np.mean(v))) for key, v in sorted(groups.items()))


def _invert(mean_of, measured: float, rel_tol: float = 1e-4) -> float:
    """The compute time c with mean_of(c) = measured: c itself if the run is compute-bound, else
    bisection on [0, measured] (mean_of rises with c)."""
    if mean_of(measured) <= measured * (1 + rel_tol):
        return measured
    if mean_of(rel_tol * measured) > measured:
        raise ValueError(f"a GEMM-only mainloop of {measured:.3g} us is faster than the HBM bandwidth allows")
    lo, hi = 0.0, measured
    while hi - lo > rel_tol * measured:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mean_of(mid) < measured else (lo, mid)
    return 0.5 * (lo + hi)


def residual_cv(measured: float, explained: float) -> float:
    """The spread left to draw per tile once the context explains ``explained`` of it: the
    measured coefficient of variation less the context's, in quadrature (0 if it explains all)."""
    if not (measured >= 0 and explained >= 0):
        raise ValueError(f'"measured" and "explained" must be >= 0, got {measured!r}, {explained!r}')
    return math.sqrt(max(measured * measured - explained * explained, 0.0))


def compute_key(shape: MoEShape, kind: str) -> tuple:
    """The calibration's key of a shape's tile kind ("l1" | "l2")."""
    block_n = shape.block_n1 if kind == "l1" else shape.block_n2
    return (shape.precision, shape.block_m, block_n, kind, shape.hidden, shape.intermediate)


class Prepass:
    """The builder's ``compute = contention``: each schedule's local run under shared HBM gives
    each tile its mainloop in context. ``anchor = mean``: every tile's work of one kind (its
    compute time and its bytes) is scaled by one factor per kind, the same in every schedule,
    until each kind's mainloop mean over the schedules run equals the compute model's (the
    fused-local records' pooled mean, as ``auto`` uses; a fixed point, a few runs), so the
    level is the records' and what depends on the schedule is the pre-pass's, with every run
    consistent in itself; ``schedule``: the same with one factor per (schedule, kind), until each
    schedule's kind mean equals that schedule's own fused-local mean (``means_us`` then maps each
    schedule name to its means: the schedules' levels measured, the structure within a schedule
    the pre-pass's); ``ratio``: one run at the GEMM-only compute times, then each kind's mainloops
    times one factor (the same in every schedule) so that their mean over the schedules is the
    compute model's (no fixed point: the split between the schedules is that run's, the level the
    records'); ``none`` keeps the GEMM-only compute times and the spec bandwidth.
    ``spread = compute`` puts each tile's spread factor on its tensor-core time (a
    bandwidth-bound tile then loses it: its share sets its time), ``work`` on its bytes too."""

    def __init__(self, shape: MoEShape, valid_rows: np.ndarray, compute_us: dict, costs: FixedCosts,
                 means_us: dict, hbm_tbps: float, share: str, anchor: str, spread: str = "compute",
                 compute_scale: float = 1.0):
        if anchor not in ANCHORS:
            raise ValueError(f'"contention_anchor" must be one of {", ".join(ANCHORS)}, got {anchor!r}')
        if spread not in SPREADS:
            raise ValueError(f'"contention_spread" must be one of {", ".join(SPREADS)}, got {spread!r}')
        missing = [k for k in ("l1", "l2") if compute_key(shape, k) not in compute_us]
        if missing:
            raise ParamError(f"compute = contention: no GEMM-only mainloop record of this shape "
                             f"({shape.precision}, hidden {shape.hidden}, intermediate {shape.intermediate}, "
                             f"{', '.join(missing)})")
        self.shape, self.valid_rows, self.costs, self.means_us = shape, valid_rows, costs, means_us
        self.compute_us = {k: compute_us[compute_key(shape, k)] for k in ("l1", "l2")}
        self.hbm_tbps, self.share, self.anchor, self.spread = hbm_tbps, share, anchor, spread
        if not (math.isfinite(compute_scale) and compute_scale > 0):
            raise ValueError(f'"compute_scale" must be a finite number > 0, got {compute_scale!r}')
        self.compute_scale = float(compute_scale)
        self.scale = {L1: 1.0, L2: 1.0}
        self.scales: dict[str, dict[int, float]] = {}   # anchor "schedule": per schedule
        self.runs: dict[str, tuple[TileTable, ContentionResult]] = {}
        self.post = {L1: 1.0, L2: 1.0}   # anchor "ratio": each kind's mainloops times this, after the run

    def run_all(self, inputs: dict, iterations: int = 8, rel_tol: float = 2e-3) -> None:
        """Run every schedule's table: inputs {name: (table, factors, l2_issue_us)}. The anchor is
        found at the compute model's clock; with ``compute_scale`` != 1 (the SMs at that clock over
        the scale: :mod:`xsim.moe.clocked`) each table then runs once more with every tile's
        tensor-core time and fixed costs times the scale and its bytes as they were: the HBM part of
        a tile does not follow the SM clock."""
        self._anchor(inputs, iterations, rel_tol)
        if self.compute_scale != 1.0:
            self.runs = {name: (t, self._run(t, f, issue, self.scales.get(name), self.compute_scale))
                         for name, (t, f, issue) in inputs.items()}

    def _anchor(self, inputs: dict, iterations: int, rel_tol: float) -> None:
        if self.anchor == "schedule":
            return self._run_per_schedule(inputs, iterations, rel_tol)
        for _ in range(iterations if self.anchor == "mean" else 1):
            self.runs = {name: (t, self._run(t, f, issue)) for name, (t, f, issue) in inputs.items()}
            if self.anchor == "none":
                return
            ratios = self._kind_ratios()
            if self.anchor == "ratio":
                self.post = ratios
                return
            if all(abs(v - 1.0) < rel_tol for v in ratios.values()):
                return
            self.scale = {k: self.scale[k] * ratios[k] for k in self.scale}

    def _kind_ratios(self) -> dict:
        """Per kind: the compute model's mean over the mean of the runs' mainloops (every schedule run)."""
        ratios = {}
        for kind, name in ((L1, "l1"), (L2, "l2")):
            means = [r.mainloop_us[t.tiles[:, KIND] == kind].mean() for t, r in self.runs.values()
                     if np.any(t.tiles[:, KIND] == kind)]
            ratios[kind] = self.means_us[name] / float(np.mean(means)) if means and self.means_us[name] > 0 else 1.0
        return ratios

    def _run_per_schedule(self, inputs: dict, iterations: int, rel_tol: float) -> None:
        """Anchor ``schedule``: each schedule its own factor per kind, to its own means."""
        missing = [name for name in inputs if name not in self.means_us]
        if missing:
            raise ValueError(f'"contention_anchor" schedule: no fused-local mean mainloops of the '
                             f'{missing[0]!r} schedule for this layer')
        self.scales = {name: {L1: 1.0, L2: 1.0} for name in inputs}
        for _ in range(iterations):
            self.runs = {name: (t, self._run(t, f, issue, self.scales[name])) for name, (t, f, issue) in inputs.items()}
            converged = True
            for name, (t, r) in self.runs.items():
                for kind, kn in ((L1, "l1"), (L2, "l2")):
                    sel, target = t.tiles[:, KIND] == kind, self.means_us[name][kn]
                    if sel.any() and target > 0:
                        ratio = target / float(r.mainloop_us[sel].mean())
                        converged &= abs(ratio - 1.0) < rel_tol
                        self.scales[name][kind] *= ratio
            if converged:
                return

    def _run(self, table: TileTable, factors: np.ndarray, l2_issue_us: np.ndarray,
             scale: dict | None = None, compute_scale: float = 1.0) -> ContentionResult:
        kind = table.tiles[:, KIND]
        scale = self.scale if scale is None else scale
        level = np.where(kind == L1, scale[L1], scale[L2])
        work = level * np.asarray(factors, dtype=float)
        costs = self.costs if compute_scale == 1.0 else FixedCosts(
            **{k: v * compute_scale for k, v in vars(self.costs).items()})
        return local_mainloops(table, self.shape, self.valid_rows, self.compute_us["l1"] * compute_scale,
                               self.compute_us["l2"] * compute_scale, costs, self.hbm_tbps, work, l2_issue_us,
                               self.share, bytes_scale=work if self.spread == "work" else level)

    def context_cv(self) -> dict:
        """Per kind ("l1", "l2"): the spread of the runs' mainloops in context, as the records'
        (:func:`xsim.spread.spread_cv` of each schedule's run, the mean over the schedules run)."""
        out = {}
        for kind, name in ((L1, "l1"), (L2, "l2")):
            cvs = [spread_cv(*np.percentile(x, [10, 90]), x.mean()) for x in
                   (r.mainloop_us[t.tiles[:, KIND] == kind] for t, r in self.runs.values()) if len(x)]
            out[name] = float(np.mean(cvs)) if cvs else 0.0
        return out

    def mainloops_us(self, schedule: str) -> np.ndarray:
        """The schedule's per-tile mainloops in context (after :meth:`run_all`)."""
        table, result = self.runs[schedule]
        return result.mainloop_us * np.where(table.tiles[:, KIND] == L1, self.post[L1], self.post[L2])
