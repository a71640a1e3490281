"""Both schedules' tile tables: every tile once, dependencies kept, deadlock-free, same mix."""

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from xsim.moe.layout import expert_layout
from xsim.moe.routing import route
from xsim.moe.schedule import (d_knee, default_lead, experts_per_wave, interleaved_table,
                               schedule_table, wave_table)
from xsim.moe.shapes import MoEShape
from xsim.moe.tiles import EXPERT, KIND, L1, L2, MBLOCK, NBLOCK, TileTable

configs = st.fixed_dictionaries({
    "hidden": st.sampled_from([128, 256, 384]),
    "intermediate": st.sampled_from([64, 128, 192, 256]),
    "experts": st.sampled_from([1, 2, 4, 8]),
    "topk": st.integers(1, 4),
    "tokens": st.integers(1, 300),
    "block_m": st.sampled_from([16, 32, 64]),
    "n_streams": st.integers(1, 12),
    "routing": st.sampled_from(["balanced", "zipf", "hot"]),
    "seed": st.integers(0, 5),
    "lead": st.one_of(st.none(), st.integers(1, 6)),
})


def build(c):
    shape = MoEShape(hidden=c["hidden"], intermediate=c["intermediate"], experts=c["experts"],
                     topk=min(c["topk"], c["experts"]), tokens=c["tokens"], block_m=c["block_m"],
                     block_n1=64, block_n2=128)
    skew = {"balanced": 0.0, "zipf": 1.2, "hot": 0.7}[c["routing"]]
    lay = expert_layout(shape, route(shape, c["routing"], skew, c["seed"]))
    return shape, lay


def expected_tiles(shape, lay):
    expert = lay.mblock_expert()
    rows = [(L1, expert[m], m, n) for m in range(lay.n_mblocks) for n in range(shape.l1_nblocks)]
    rows += [(L2, expert[m], m, n) for m in range(lay.n_mblocks) for n in range(shape.l2_nblocks)]
    return sorted(rows)


def random_progress(table: TileTable, rng: random.Random) -> list[int]:
    """Run co-resident streams in a random interleaving; returns the global execution order."""
    pos = list(table.offsets[:-1])
    done = np.zeros(table.n_mblocks, dtype=int)
    order = []
    while True:
        ready = [s for s in range(table.n_streams) if pos[s] < table.offsets[s + 1]
                 and (table.tiles[pos[s], KIND] == L1 or done[table.tiles[pos[s], MBLOCK]] == table.l1_nblocks)]
        if not ready:
            return order
        s = rng.choice(ready)
        kind, _, m, _ = table.tiles[pos[s]]
        if kind == L1:
            done[m] += 1
        order.append(pos[s])
        pos[s] += 1


@settings(max_examples=60, deadline=None)
@given(configs)
def test_tables_have_every_tile_once_and_never_deadlock(c):
    shape, lay = build(c)
    want = expected_tiles(shape, lay)
    tables = [wave_table(shape, lay, c["n_streams"]), interleaved_table(shape, lay, c["n_streams"], c["lead"])]
    for table in tables:
        table.validate()
        assert table.tiles.dtype == np.int32 and table.offsets.dtype == np.int32
        assert len(table.offsets) == c["n_streams"] + 1
        assert sorted(map(tuple, table.tiles.tolist())) == want       # same mix in both schedules
        order = random_progress(table, random.Random(c["seed"]))
        assert len(order) == table.n_tiles                            # no deadlock in any interleaving
        seen = np.zeros(table.n_mblocks, dtype=int)
        for i in order:                                                # no dependency violated
            kind, _, m, _ = table.tiles[i]
            if kind == L1:
                seen[m] += 1
            else:
                assert seen[m] == table.l1_nblocks


def test_wave_streams_run_a_wave_l1_then_its_l2():
    shape = MoEShape(hidden=256, intermediate=128, experts=8, topk=2, tokens=512, block_m=32, block_n1=64)
    lay = expert_layout(shape, route(shape, "balanced"))
    per_wave = experts_per_wave(shape, 4)
    table = wave_table(shape, lay, 4)
    for s in range(4):
        t = table.stream(s)
        phase = (t[:, EXPERT] // per_wave) * 2 + t[:, KIND]
        assert np.all(np.diff(phase) >= 0)
    first = table.stream(0)
    assert first[0].tolist() == [L1, 0, 0, 0] and table.stream(1)[0].tolist() == [L1, 0, 0, 1]


def test_experts_per_wave_follows_deepgemm_sizing():
    # 8 local experts, 128 rows each at block_m 64 -> 2 m-blocks x 4 L1 n-blocks = 8 L1 tiles per
    # expert; 2 x 16 SMs / 8 = 4 experts per wave (a divisor of 8).
    shape = MoEShape(hidden=256, intermediate=256, experts=8, topk=1, tokens=1024, block_m=64, block_n1=64)
    assert experts_per_wave(shape, 16) == 4
    assert experts_per_wave(shape, 20) == 8       # ceil(40 / 8) = 5 rounds up to the divisor 8
    sparse = MoEShape(hidden=256, intermediate=256, experts=64, topk=1, tokens=32)
    assert experts_per_wave(sparse, 132) == 64     # < 1 expected row per expert: one wave


def test_interleaved_follows_algorithm_1_on_a_small_case():
    # one expert, 3 rows (m-blocks), P1 = 2 L1 n-blocks, P2 = 1 L2 n-block (odd: unpaired), one
    # stream, lead 1.
    shape = MoEShape(hidden=128, intermediate=128, experts=1, topk=1, tokens=96, block_m=32, block_n1=64)
    lay = expert_layout(shape, route(shape, "balanced"))
    t = interleaved_table(shape, lay, 1, lead=1)
    got = [(int(k), int(m), int(n)) for k, _, m, n in t.tiles]
    # k1 row 0: L1(0,0), L1(0,1); then row1 = 1 >= 0 + 1 -> L2(0,0); row1 = 1 < 1 + 1 -> L1(1,0),
    # L1(1,1); row1 = 2 -> L2(1,0); L1(2,0), L1(2,1); L1 done -> L2(2,0)
    assert got == [(0, 0, 0), (0, 0, 1), (1, 0, 0), (0, 1, 0), (0, 1, 1), (1, 1, 0),
                   (0, 2, 0), (0, 2, 1), (1, 2, 0)]


def test_paired_streams_split_n_blocks_by_role():
    shape = MoEShape(hidden=256, intermediate=256, experts=2, topk=1, tokens=128, block_m=64, block_n1=64)
    lay = expert_layout(shape, route(shape, "balanced"))
    t = interleaved_table(shape, lay, 4, lead=1)
    for s in range(4):
        assert np.all(t.stream(s)[:, NBLOCK] % 2 == s % 2)


def test_d_knee_is_eq_16():
    shape = MoEShape(hidden=2048, intermediate=768, experts=128, topk=8, tokens=64)
    assert d_knee(shape, 132) == pytest.approx(128 * 2 * 132 / (2 * 768))
    assert default_lead(shape, 132) == 44      # twice the knee


def test_lead_zero_is_a_dependency_cycle():
    shape = MoEShape(hidden=128, intermediate=128, experts=1, topk=1, tokens=64, block_m=32)
    lay = expert_layout(shape, route(shape, "balanced"))
    with pytest.raises(ValueError, match="dependency cycle"):
        interleaved_table(shape, lay, 1, lead=0).validate()


def test_unsafe_cross_stream_order_is_rejected():
    # stream 0 waits on L2(m0) before running L1(m1); stream 1 waits on L2(m1) before L1(m0)
    tiles = np.array([[L2, 0, 0, 0], [L1, 0, 1, 0], [L2, 0, 1, 0], [L1, 0, 0, 0]], dtype=np.int32)
    table = TileTable(np.array([0, 2, 4], np.int32), tiles, l1_nblocks=1, l2_nblocks=1, n_mblocks=2)
    with pytest.raises(ValueError, match="not safe for co-resident streams"):
        table.validate()


def test_missing_and_duplicate_tiles_are_rejected():
    tiles = np.array([[L1, 0, 0, 0], [L1, 0, 0, 0]], dtype=np.int32)
    table = TileTable(np.array([0, 2], np.int32), tiles, l1_nblocks=1, l2_nblocks=1, n_mblocks=1)
    with pytest.raises(ValueError, match="appears 2 times"):
        table.validate()


def test_schedule_table_names():
    shape = MoEShape(hidden=128, intermediate=128, experts=2, topk=1, tokens=64)
    lay = expert_layout(shape, route(shape, "balanced"))
    assert schedule_table(shape, lay, "wave", 3).schedule == "wave"
    with pytest.raises(ValueError, match='"schedule" must be one of'):
        schedule_table(shape, lay, "fifo", 3)


def test_wave_round_robin_continues_across_phases():
    # 1 expert, 1 m-block: 3 L1 tiles (intermediate 192 / 64) then 1 L2 tile, 2 streams:
    # L1 tiles 0, 1, 2 -> streams 0, 1, 0; the L2 tile is the 4th dealt -> stream 1
    shape = MoEShape(hidden=128, intermediate=192, experts=1, topk=1, tokens=64, block_m=64, block_n1=64)
    lay = expert_layout(shape, route(shape, "balanced"))
    t = wave_table(shape, lay, 2)
    assert [tuple(x) for x in t.stream(0)] == [(L1, 0, 0, 0), (L1, 0, 0, 2)]
    assert [tuple(x) for x in t.stream(1)] == [(L1, 0, 0, 1), (L2, 0, 0, 0)]
