"""The two schedules as tile tables (paper Sec. 4.2): DeepGEMM's expert waves and Algorithm 1.

Expert waves (the baseline): local experts are grouped into waves of ``experts_per_wave``
(sized as DeepGEMM's MegaMoE heuristic sizes them: enough Linear-1 tiles, after a 2x
routing-imbalance allowance, to keep every SM busy, rounded up to a divisor of the local
expert count; all experts in one wave when an expert expects < 1 row). Within a wave all
Linear-1 tiles run, then all its Linear-2 tiles; the tiles are dealt block-cyclically over the
streams in that order (expert, m-block, n-block), the round-robin continuing from one phase
into the next as DeepGEMM's per-SM block index does (``scheduler/mega_moe.cuh`` at the
paper's expert-wave version: ``block_idx += kNumSMs``, less each finished phase's blocks).

Interleaved (Algorithm 1): the scheduler rows are the rank's global m-blocks in expert order.
Streams work in CTA pairs (stream 2g + r is role r of pair g, G = n_streams / 2 pairs) when
both n-block counts and n_streams are even, else alone (G = n_streams, r = 0). Pair g walks
the Linear-1 pair cursor k1 and the Linear-2 cursor k2 from g in strides of G; it emits the
Linear-2 tile of row p2 = k2 // P2 only when the Linear-1 cursor's row p1 = k1 // P1 leads by
at least ``lead`` rows (p1 = +inf once Linear-1 is done), else the next Linear-1 tile. Every
lead >= 1 is deadlock-free (a waiting Linear-2 tile only ever waits on streams blocked at
strictly lower rows); lead 0 can deadlock and ``validate`` says so.
"""

from __future__ import annotations

import math

import numpy as np

from xsim.closedform.megamoe import d_knee_rows
from xsim.moe.layout import ExpertLayout
from xsim.moe.shapes import MoEShape
from xsim.moe.tiles import L1, L2, TileTable

SCHEDULES = ("wave", "interleaved")
IMBALANCE_FACTOR = 2   # DeepGEMM's allowance for experts that receive fewer tokens


def experts_per_wave(shape: MoEShape, n_streams: int) -> int:
    """DeepGEMM's wave size: the fewest experts whose Linear-1 tiles fill 2x the SMs."""
    e_local = shape.experts_local
    expected_rows = shape.expected_rows_per_expert
    if expected_rows < 1:
        return e_local
    mblocks = -(-math.ceil(expected_rows) // shape.block_m)
    l1_tiles_per_expert = mblocks * shape.l1_nblocks
    per_wave = min(-(-IMBALANCE_FACTOR * n_streams // l1_tiles_per_expert), e_local)
    while per_wave < e_local and e_local % per_wave:
        per_wave += 1
    return per_wave


def d_knee(shape: MoEShape, n_streams: int) -> float:
    """Eq. 16 in scheduler rows; an L1 tile spans 2 * block_n1 weight columns (gate and up)."""
    return d_knee_rows(2 * shape.block_n1, n_streams, shape.intermediate)


def default_lead(shape: MoEShape, n_streams: int) -> int:
    """ceil(2 D_knee), at least 1 (deadlock-free).

    Eq. 16 is a lower bound; the DES puts the knee at about D_knee when streams work in pairs
    and about 2 D_knee when they cannot (odd n-block counts), and shows a lead of 2 D_knee
    costs paired configs at most ~3% (benchmarks/results/moe_lead_knee.txt): one default for both.
    """
    return max(1, math.ceil(2.0 * d_knee(shape, n_streams) - 1e-9))


def wave_table(shape: MoEShape, lay: ExpertLayout, n_streams: int = 132) -> TileTable:
    _check_streams(n_streams)
    per_wave = experts_per_wave(shape, n_streams)
    streams: list[list[np.ndarray]] = [[] for _ in range(n_streams)]
    dealt = 0   # tiles dealt so far: the round-robin continues across phases, as DeepGEMM's block index does
    for first in range(0, shape.experts_local, per_wave):
        mblocks = np.arange(lay.expert_mblock[first], lay.expert_mblock[min(first + per_wave, shape.experts_local)])
        for kind, nblocks in ((L1, shape.l1_nblocks), (L2, shape.l2_nblocks)):
            phase = _phase_tiles(kind, mblocks, nblocks, lay)
            for s in range(n_streams):
                start = (s - dealt) % n_streams   # phase tile t goes to stream (t + dealt) mod n_streams
                if start < len(phase):
                    streams[s].append(phase[start::n_streams])
            dealt += len(phase)
    return _table(streams, shape, lay, "wave", 0.0)


def interleaved_table(shape: MoEShape, lay: ExpertLayout, n_streams: int = 132,
                      lead: float | None = None) -> TileTable:
    _check_streams(n_streams)
    lead = default_lead(shape, n_streams) if lead is None else lead
    if not lead >= 0:
        raise ValueError(f'"lead" must be >= 0, got {lead!r}')
    width = 2 if n_streams % 2 == 0 and shape.l1_nblocks % 2 == 0 and shape.l2_nblocks % 2 == 0 else 1
    pairs = n_streams // width
    p1, p2 = shape.l1_nblocks // width, shape.l2_nblocks // width
    rows, expert = lay.n_mblocks, lay.mblock_expert()
    streams = []
    for g in range(pairs):
        order = _algorithm1(g, pairs, rows, p1, p2, lead)
        for r in range(width):
            streams.append([_emit(order, expert, width, p1, p2, r)])
    return _table(streams, shape, lay, "interleaved", float(lead))


def schedule_table(shape: MoEShape, lay: ExpertLayout, schedule: str, n_streams: int = 132,
                   lead: float | None = None) -> TileTable:
    if schedule == "wave":
        return wave_table(shape, lay, n_streams)
    if schedule == "interleaved":
        return interleaved_table(shape, lay, n_streams, lead)
    raise ValueError(f'"schedule" must be one of {", ".join(SCHEDULES)}, got {schedule!r}')


def _algorithm1(g: int, stride: int, rows: int, p1: int, p2: int, lead: float) -> list[tuple[int, int]]:
    """One pair's merged stream as (kind, pair cursor k) in emission order."""
    k1 = k2 = g
    end1, end2 = rows * p1, rows * p2
    out = []
    while k1 < end1 or k2 < end2:
        row1 = k1 // p1 if k1 < end1 else math.inf
        if k2 < end2 and k2 // p2 + lead <= row1:
            out.append((L2, k2))
            k2 += stride
        else:
            out.append((L1, k1))
            k1 += stride
    return out


def _emit(order, expert: np.ndarray, width: int, p1: int, p2: int, r: int) -> np.ndarray:
    """Role r's tiles for a pair's order: n-block = width * (k mod P) + r."""
    if not order:
        return np.zeros((0, 4), dtype=np.int32)
    kind = np.array([o[0] for o in order], dtype=np.int64)
    k = np.array([o[1] for o in order], dtype=np.int64)
    per_row = np.where(kind == L1, p1, p2)
    m = k // per_row
    return np.stack([kind, expert[m], m, width * (k % per_row) + r], axis=1).astype(np.int32)


def _phase_tiles(kind: int, mblocks: np.ndarray, nblocks: int, lay: ExpertLayout) -> np.ndarray:
    m = np.repeat(mblocks, nblocks)
    n = np.tile(np.arange(nblocks), len(mblocks))
    e = lay.mblock_expert()[m] if len(m) else m
    return np.stack([np.full(len(m), kind), e, m, n], axis=1).astype(np.int32)


def _table(streams, shape: MoEShape, lay: ExpertLayout, name: str, lead: float) -> TileTable:
    parts = [np.concatenate(s) if s else np.zeros((0, 4), np.int32) for s in streams]
    lengths = [len(p) for p in parts]
    return TileTable(offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32),
                     tiles=np.concatenate(parts).astype(np.int32) if parts else np.zeros((0, 4), np.int32),
                     l1_nblocks=shape.l1_nblocks, l2_nblocks=shape.l2_nblocks,
                     n_mblocks=lay.n_mblocks, schedule=name, lead=lead)


def _check_streams(n_streams: int) -> None:
    if not isinstance(n_streams, (int, np.integer)) or n_streams < 1:
        raise ValueError(f'"n_streams" must be a whole number >= 1, got {n_streams!r}')
