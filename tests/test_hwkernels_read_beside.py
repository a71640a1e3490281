"""The reads-beside-stores microbenchmark under Triton's interpreter: the readers' tiles and sums (checked
against torch's), the storers' slots, the plan and the error paths. Rates are GPU-only."""

import os

os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from hwkernels import read_beside as rb  # noqa: E402

T = rb.TILE


def _src(tiles: int):
    return torch.rand(tiles * T, T).to(torch.bfloat16)


@pytest.mark.parametrize("tma", [False, True])
@pytest.mark.parametrize("footprint_tiles, shared", [(6, True), (2 << 20, False)])
def test_readers_sum_what_they_read_and_storers_fill_their_slots(tma, footprint_tiles, shared, monkeypatch):
    if not shared:      # a "large" footprint, scaled down: split it per reader at any size
        monkeypatch.setattr(rb, "reader_plan", lambda fp, n: (3 * n, 3, False))
    src = _src(9)
    dst = torch.full((2 * rb.SLOTS * T * T,), float("nan"), dtype=torch.bfloat16)
    pt = rb.Point(5, 2, 0.0, footprint_tiles * rb.TILE_BYTES, dst, src, passes=2, tma=tma, max_rounds=3,
                  read_gap_ns=300 if tma else 0)     # (no clock under the interpreter: pacing is a no-op)
    assert pt.shared is shared and pt.n_read == 3
    pt.enqueue()
    ok, err = pt.check()
    assert ok and err < 1e-5
    assert pt.rounds[:2].tolist() == [3, 3]      # the interpreter runs storers first: max_rounds each
    slots = dst.view(2, rb.SLOTS, T * T).float()
    assert bool((slots[0, :3] == 1).all() and (slots[1, :3] == 2).all() and slots[:, 3:].isnan().all())
    # every reader read `passes` times its own tiles: a shared footprint all 6 tiles, from its own start
    per_tile = src.view(9, T, T).float().sum(dim=(1, 2)).double()
    own = [2 * float(per_tile[3 * r:3 * r + 3].sum()) for r in range(3)]
    want = [2 * float(per_tile[:6].sum())] * 3 if shared else own
    assert pt.sums[2:].double().numpy() == pytest.approx(want, rel=1e-5)


def test_a_wrong_sum_or_a_foreign_value_fails_the_check():
    src, dst = _src(2), torch.full((rb.SLOTS * T * T,), float("nan"), dtype=torch.bfloat16)
    pt = rb.Point(3, 1, 0.0, 2 * rb.TILE_BYTES, dst, src, passes=1, tma=False, max_rounds=2)
    pt.enqueue()
    assert pt.check()[0]
    pt.sums[1] *= 1.01                            # 1 % off
    assert not pt.check()[0]
    pt.enqueue()
    dst[5] = 7.0                                  # a value no storer writes
    assert not pt.check()[0]


def test_reader_plan_shares_small_footprints_and_splits_large_ones():
    assert rb.reader_plan(8 << 20, 100) == (256, 256, True)
    n, per, shared = rb.reader_plan(1 << 30, 100)
    assert not shared and per == (1 << 30) // rb.TILE_BYTES // 100 and n == 100 * per
    for fp, n_read in ((1 << 20, 0), (1024, 4)):
        with pytest.raises(ValueError, match="reader"):
            rb.reader_plan(fp, n_read)


def test_plan_puts_the_no_store_control_first_per_footprint():
    args = rb.parse_args(["--out", "x.jsonl", "--storers", "4,200", "--gaps-us", "0,10", "--footprints-mb", "8,1024"])
    pts = rb.plan(args, 132)
    assert pts[0] == (0, 0.0, 8 << 20, "none", 0) and pts[5] == (0, 0.0, 1 << 30, "none", 0)
    assert len(pts) == 2 * (1 + 2 * 2) and all(s < 132 for s, *_ in pts)     # 200 storers: no readers left
    paced = rb.plan(rb.parse_args(["--out", "x.jsonl", "--storers", "4", "--gaps-us", "10", "--footprints-mb", "8",
                                   "--read-gaps-ns", "0,500"]), 132)
    assert paced == [(0, 0.0, 8 << 20, "none", 0), (4, 10.0, 8 << 20, "host", 0), (4, 10.0, 8 << 20, "local", 0),
                     (0, 0.0, 8 << 20, "none", 500), (4, 10.0, 8 << 20, "host", 500), (4, 10.0, 8 << 20, "local", 500)]


def test_samples_turn_clock_edges_into_rates():
    src, dst = _src(2), torch.empty(rb.SLOTS * T * T, dtype=torch.bfloat16)
    pt = rb.Point(3, 1, 0.0, 2 * rb.TILE_BYTES, dst, src, passes=1, tma=False)
    pt.ns.copy_(torch.tensor([0, 2000, 100, 1100, 100, 2100]))     # storer, then two readers (ns)
    pt.rounds[0] = 4
    got = pt.samples(5.0)
    assert got["reader_us"].tolist() == [1.0, 2.0]
    assert got["read_gbps"] == pytest.approx(2 * 2 * rb.TILE_BYTES / 2000)
    assert got["store_gbps"] == pytest.approx(4 * rb.TILE_BYTES / 2000)
    pt.ns.zero_()
    assert np.isnan(pt.samples(5.0)["read_gbps"])


@pytest.mark.parametrize("argv, msg", [(["--storers", "a"], "comma-separated"), (["--storers", "0"], "--storers"),
                                       (["--gaps-us", "-1"], "--storers"), (["--dests", "peer"], "--dests"),
                                       (["--footprints-mb", "0.001"], "--footprints-mb"),
                                       (["--passes", "0"], "--passes"), (["--loads", "ldg"], "--loads"),
                                       (["--read-gaps-ns", "-5"], "--read-gaps-ns"),
                                       (["--read-gaps-ns", "x"], "comma-separated")])
def test_bad_options_are_one_line_exit_2(argv, msg, capsys):
    with pytest.raises(SystemExit) as e:
        rb.parse_args(["--out", "x.jsonl", *argv])
    assert e.value.code == 2 and msg in capsys.readouterr().err


def test_a_point_too_big_for_its_buffers_is_refused():
    src = _src(2)
    with pytest.raises(ValueError, match="source"):
        rb.Point(3, 1, 0.0, 4 * rb.TILE_BYTES, torch.empty(rb.SLOTS * T * T, dtype=torch.bfloat16), src, 1, tma=False)
    with pytest.raises(ValueError, match="destination"):
        rb.Point(3, 2, 0.0, 2 * rb.TILE_BYTES, torch.empty(rb.SLOTS * T * T, dtype=torch.bfloat16), src, 1, tma=False)
