"""FA + A2A on N ranks (Ulysses SP = N): the receive-side layout against fa_layout's index math,
the kernels' per-owner (DELTA) store path into separate buffers, and the runner's N-rank path
run for real by 2 and 3 gloo processes on the CPU (Triton's interpreter, shared-memory peers)."""

import ctypes
import os

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from helpers_ranks import cpu_rank, read_records, shared_buffers, spawn  # noqa: E402
from hwkernels import fa, fa_dist, fa_layout  # noqa: E402


def cpu_memcpy2d(dst, dpitch, src, spitch, width, rows):
    """The copy engine's 2-D copy on CPU memory addressed by data_ptr (test only)."""
    for r in range(rows):
        ctypes.memmove(dst + r * dpitch, src + r * spitch, width)


def tiny(sp, rank=0, heads=None, seq_len=None):
    return fa.FAShape(batch=1, heads=heads or 2 * sp, seq_len=seq_len or 16 * sp, head_dim=64,
                      sp=sp, rank=rank, block_m=16, block_n=16)


def test_assembled_receive_buffer_follows_dest_offset():
    sp = 3
    refs = [torch.randn(tiny(sp, r).qkv_shape) for r in range(sp)]
    for o in range(sp):
        recv = torch.stack([fa.expected_owner_slice(refs[s], tiny(sp, s), o) for s in range(sp)])
        got = fa_dist.assemble_owner(recv).reshape(-1)
        for s in range(sp):
            sh = tiny(sp, s)
            for b, h, mb in fa_layout.tiles(sh.batch, sh.heads_local, sh.seq_len, sh.block_m):
                m0 = mb * sh.block_m
                if fa_layout.owner_of(m0, sh.seq_len, sp) != o:
                    continue
                off = fa_layout.dest_offset(b, m0, h, s, sh.seq_len, sh.heads, sp, sh.head_dim)
                for i in range(sh.block_m):
                    row = got[off + i * sh.heads * sh.head_dim:][:sh.head_dim]
                    assert torch.equal(row, refs[s][b, h, m0 + i])


def test_rank_seeds_and_world_problems():
    assert fa_dist.rank_seed(5, 0) == 5 and fa_dist.rank_seed(5, 1) != fa_dist.rank_seed(5, 2)
    assert "needs at least 2 GPUs" in fa_dist.world_problem("peer", 1)
    assert "use --target peer" in fa_dist.world_problem("host", 3)
    assert fa_dist.world_problem("peer", 2) == "" and fa_dist.world_problem("host", 1) == ""
    assert fa_dist.ring_bytes(tiny(2), 3) == 3 * tiny(2).slice_elems * 2


class LoopDest:
    """Every owner's buffer a separate CPU allocation in this process (one rank's view)."""

    def __init__(self, shape, slots):
        self.bufs = [torch.empty(fa_dist.ring_bytes(shape, slots), dtype=torch.uint8)
                     for _ in range(shape.sp)]

    def remote(self, owner):
        return self.bufs[owner]


@pytest.mark.parametrize("sp,rank", [(2, 1), (3, 1)])
def test_every_store_path_reaches_each_owner_buffer(sp, rank):
    shape = tiny(sp, rank)
    dest = LoopDest(shape, slots=2)
    bufs = fa_dist.peer_buffers(shape, dest, 2)
    q, k, v = fa.generate_input(shape, seed=3, device="cpu")
    ref = fa.reference(q, k, v)
    out = torch.empty(shape.qkv_shape, dtype=torch.bfloat16)
    lo, hi = rank * shape.heads_local, (rank + 1) * shape.heads_local
    flags = torch.zeros(2, dtype=torch.int32)
    stage = torch.empty(2 * shape.block_m * shape.head_dim, dtype=torch.bfloat16)
    fa.launch_fa(q, k, v, shape, fa.MODE_LOCAL, out=out, programs=2, num_warps=1)
    launches = {
        "fused": lambda b: fa.launch_fa(q, k, v, shape, fa.MODE_FUSED, bufs=b, programs=2,
                                        num_warps=1),
        "cc-atomic": lambda b: fa.launch_fa(q, k, v, shape, fa.MODE_CC, bufs=b, flags=flags,
                                            programs=2, num_warps=1),
        "paced": lambda b: fa.launch_fa(q, k, v, shape, fa.MODE_PACED, bufs=b, pace=2,
                                        stage=stage, order="remote-first", programs=2,
                                        num_warps=1),
        "a2a-store": lambda b: fa.launch_a2a_store(out, b, shape, programs=2, num_warps=1),
        "a2a-ce": lambda b: fa.a2a_copy_engine(ref.to(torch.bfloat16).contiguous(), b, shape,
                                               cpu_memcpy2d)}
    for name, launch in launches.items():
        for b in bufs:
            fa.poison(*b.owners)
        launch(bufs[1])                                  # ring slot 1 only
        for o in range(sp):
            got = bufs[1].owners[o]
            want = fa.expected_owner_slice(ref, shape, o)
            err = (got[:, :, lo:hi].float() - want).abs().max()
            assert float(err) < fa.ATOL, (name, o)
            others = torch.cat([got[:, :, :lo], got[:, :, hi:]], dim=2)
            assert torch.isnan(others.float()).all(), (name, o)      # other ranks' heads
            assert torch.isnan(bufs[0].owners[o].float()).all(), (name, o)   # other slot


# -- N real ranks ------------------------------------------------------------------------------

VARIANTS = {2: "fa-only,a2a-store,a2a-ce,serial,fused,fused-paced,cc-atomic",
            3: "a2a-ce,fused,fused-paced"}    # 3 ranks (two remote owners each): a subset


def _runner_child(rank, world, port, buffers, out, variants, sabotage):
    from hwkernels import fa_bench, fa_variants, harness

    def no_graph(fn):
        raise RuntimeError("no CUDA graphs on the CPU")

    def cpu_case(self, *a, **k):
        init(self, *a, **k)
        self._memcpy2d = cpu_memcpy2d

    with cpu_rank(rank, world, port, buffers, sabotage):
        torch.cuda.synchronize = lambda *a: None
        harness.flush_l2_cache = lambda: None
        harness.capture_graph = no_graph
        fa_bench.MAX_SLOTS = 2
        init = fa_variants.Case.__init__
        fa_variants.Case.__init__ = cpu_case
        rc = fa_bench.main(["--out", out, "--target", "peer", "--seq-lens", str(16 * world),
                            "--heads", str(2 * world), "--head-dim", "64", "--tokens", "1",
                            "--block-m", "16", "--block-n", "16", "--num-warps", "1",
                            "--pace", "2", "--programs", "2", "--repeats", "2",
                            "--variants", variants])
        assert rc == (1 if sabotage else 0)


@pytest.mark.parametrize("world", [2, 3])
def test_runner_on_n_ranks_checks_what_each_owner_received(world, tmp_path):
    out = tmp_path / "r.jsonl"
    buffers = shared_buffers(world, fa_dist.ring_bytes(tiny(world), 2))
    spawn(_runner_child, world, buffers, str(out), VARIANTS[world], False)
    recs = read_records(out)                                    # rank 0's records only
    assert [r["params"]["variant"] for r in recs] == VARIANTS[world].split(",")
    for r in recs:
        assert r["check"]["ok"], (r["params"]["variant"], r["check"])
        assert r["params"]["sp"] == world and r["params"]["destination"] == "peer"
        assert r["params"]["ring_slots"] == 2 and r["platform"]["gpu_count"] == world
        assert r["stats"]["kernel_us"]["n"] == 2


def test_tiles_that_never_reach_their_owner_fail_its_check(tmp_path):
    out = tmp_path / "r.jsonl"
    buffers = shared_buffers(2, fa_dist.ring_bytes(tiny(2), 2))
    spawn(_runner_child, 2, buffers, str(out), "fa-only,fused", True)
    ok = {r["params"]["variant"]: r["check"]["ok"] for r in read_records(out)}
    assert ok == {"fa-only": True, "fused": False}
