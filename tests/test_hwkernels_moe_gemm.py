"""The GEMM-only tables (pure numpy; the timed comparison itself needs the GPU)."""

import numpy as np

from hwkernels.moe_gemm import gemm_table


def test_grouped_table_holds_every_tile_once_in_raster_order():
    t = gemm_table(1, n_mblocks=10, nblocks=3, n_streams=4, l1_nblocks=2, group_m=4)
    assert t.offsets[-1] == len(t.tiles) == 30
    assert sorted(map(tuple, t.tiles[:, 2:].tolist())) == [(m, n) for m in range(10) for n in range(3)]
    assert set(t.tiles[:, 0].tolist()) == {1} and t.l1_nblocks == 2
    first = [tuple(t.tiles[t.offsets[s], 2:]) for s in range(4)]   # the tiles that start together
    assert first == [(0, 0), (1, 0), (2, 0), (3, 0)]                # one n-block, 4 m-blocks
    assert np.all(np.diff(t.offsets) >= 7)


def test_fewer_tiles_than_streams_leaves_no_empty_stream():
    t = gemm_table(0, n_mblocks=1, nblocks=2, n_streams=8, l1_nblocks=2)
    assert len(t.offsets) == 3 and t.offsets.tolist() == [0, 1, 2]


def test_batched_table_numbers_each_experts_mblocks_after_the_previous_experts():
    t = gemm_table(0, n_mblocks=2, nblocks=3, n_streams=5, l1_nblocks=3, experts=3)
    assert t.offsets[-1] == len(t.tiles) == 18
    got = sorted(map(tuple, t.tiles[:, 1:].tolist()))
    assert got == [(e, e * 2 + m, n) for e in range(3) for m in range(2) for n in range(3)]


def test_one_expert_table_is_unchanged_by_the_experts_argument():
    a = gemm_table(1, n_mblocks=10, nblocks=3, n_streams=4, l1_nblocks=2, group_m=4)
    b = gemm_table(1, n_mblocks=10, nblocks=3, n_streams=4, l1_nblocks=2, group_m=4, experts=1)
    assert np.array_equal(a.tiles, b.tiles) and np.array_equal(a.offsets, b.offsets)


def test_batched_problem_gives_expert_e_the_rows_e_m_to_e_plus_1_m():
    from hwkernels.moe_gemm import gemm_problem

    p = gemm_problem(64, 32, 32, "bf16", n_streams=3, device="cpu", blocks=(16, 16, 32),
                     experts=3)
    assert p.shape.tokens == 96 and p.data.w1.shape == (3, 64, 64)
    assert p.layout.row_token.tolist() == list(range(96))
    assert p.layout.expert_rows.tolist() == [0, 32, 64, 96]
    l1 = p.tables["l1"].tiles
    assert sorted({(e, m) for _, e, m, _ in l1.tolist()}) == [(e, e * 2 + j) for e in range(3)
                                                              for j in range(2)]


def test_block_m_must_divide_the_rows_per_expert():
    import pytest

    from hwkernels.moe_gemm import gemm_problem

    with pytest.raises(ValueError, match="block_m"):
        gemm_problem(64, 32, 40, "bf16", device="cpu", blocks=(16, 16, 32))


def test_batch_experts_caps_rows_and_weights():
    from hwkernels.moe_gemm_sections import batch_experts

    assert batch_experts(128, 1024, 2048, 768) == 32       # rows: 32768 // 1024
    assert batch_experts(128, 4096, 2048, 768) == 8
    assert batch_experts(16, 1024, 1408, 5632) == 16       # the config's own experts
    assert batch_experts(16, 1024, 6400, 18304) == 3       # weights: 2**30 // (3 H I)
    assert batch_experts(4, 65536, 64, 64) == 1
