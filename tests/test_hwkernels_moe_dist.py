"""The MoE layer on N ranks (EP = N): the pure Dispatch/ownership logic, the receive-side
reference, and the runner's N-rank path run for real by 2 and 3 gloo processes on the CPU
(Triton's interpreter, one stream per rank, stores into the other processes' shared memory)."""

import os
from types import SimpleNamespace

os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from helpers_ranks import cpu_rank, read_records, shared_buffers, spawn  # noqa: E402
from hwkernels import moe, moe_catalog, moe_dist  # noqa: E402
from xsim.moe.layout import expert_layout  # noqa: E402
from xsim.moe.routing import route  # noqa: E402
from xsim.moe.shapes import MoEShape  # noqa: E402


def tiny(ep, experts=4, precision="bf16", tokens=12):
    return MoEShape(hidden=64, intermediate=64, experts=experts, topk=2, tokens=tokens, ep=ep,
                    precision=precision, block_m=16, block_n1=32, block_n2=32)


def test_dispatch_plan_by_hand():
    shape = MoEShape(hidden=16, intermediate=16, experts=4, topk=2, tokens=2, ep=2,
                     block_m=16, block_n1=16, block_n2=16)
    # rank 0 holds experts 0, 1; rank 1 experts 2, 3. Tokens 0, 1 on rank 0; 2, 3 on rank 1.
    ids = np.array([[0, 1], [1, 3], [2, 3], [0, 2]])
    p0, p1 = (moe_dist.dispatch_plan(shape, ids, r) for r in (0, 1))
    assert p0.send_tokens.tolist() == [0, 1, 1] and p0.send_counts.tolist() == [2, 1]
    assert p0.recv_tokens.tolist() == [0, 1, 3] and p0.recv_counts.tolist() == [2, 1]
    assert p1.send_tokens.tolist() == [3, 2, 3] and p1.send_counts.tolist() == [1, 2]
    assert p1.recv_tokens.tolist() == [1, 2, 3] and p1.recv_counts.tolist() == [1, 2]


@pytest.mark.parametrize("world,experts", [(2, 4), (3, 6), (4, 8)])
def test_what_each_rank_sends_is_what_its_peers_expect(world, experts):
    shape = tiny(world, experts)
    r = route(shape, "zipf", 1.2, seed=world)
    plans = [moe_dist.dispatch_plan(shape, r.topk_ids, k) for k in range(world)]
    for s in range(world):
        sent = np.split(plans[s].send_tokens, np.cumsum(plans[s].send_counts)[:-1])
        for d in range(world):
            recv = np.split(plans[d].recv_tokens, np.cumsum(plans[d].recv_counts)[:-1])
            assert sent[d].tolist() == recv[s].tolist()
            assert np.all(sent[d] // shape.tokens == s)            # only its own tokens
    for d in range(world):   # every token a rank's layout gathers has been sent to it, once
        lay = expert_layout(shape, r, rank=d)
        got = plans[d].recv_tokens
        assert len(set(got.tolist())) == len(got)
        assert set(lay.row_token.tolist()) == set(got.tolist())


def test_impossible_worlds_are_one_line_errors():
    with pytest.raises(ValueError, match=r'"experts" \(6\) must be divisible by "ep" \(4\)'):
        moe_dist.with_ep(moe_catalog.Config("c", tiny(1, experts=6)), 4)
    with pytest.raises(ValueError, match='"ep" \\(2\\) must be 1 or the number of ranks \\(3\\)'):
        moe_dist.with_ep(moe_catalog.Config("c", tiny(2)), 3)
    assert moe_dist.with_ep(moe_catalog.Config("c", tiny(1)), 2).shape.ep == 2
    with pytest.raises(ValueError, match="routing has shape"):
        moe_dist.dispatch_plan(tiny(2), np.zeros((12, 2), np.int64), 0)
    with pytest.raises(ValueError, match="expert ids"):
        moe_dist.dispatch_plan(tiny(2), np.full((24, 2), 4), 0)
    with pytest.raises(ValueError, match='"rank"'):
        moe_dist.dispatch_plan(tiny(2), np.zeros((24, 2), np.int64), 2)
    args = SimpleNamespace(target="peer", tune=False, combine="host")
    assert "needs at least 2 GPUs" in moe_dist.world_problem(args, 1)
    assert moe_dist.world_problem(args, 3) == ""
    assert "one process" in moe_dist.world_problem(SimpleNamespace(target="host"), 2)


def test_own_routing_lists_each_own_slot_once_over_the_groups():
    shape = tiny(3, experts=6)
    r = route(shape, "hot", 0.6, seed=1)
    own = moe_dist.own_routing(shape, r, 1)
    seen = np.zeros((shape.tokens, shape.topk), int)
    for g in range(3):
        lay = expert_layout(shape, own, rank=g)
        np.add.at(seen, (lay.row_token, lay.row_slot), 1)
        assert np.all(r.topk_ids[shape.tokens + lay.row_token, lay.row_slot] // 2 == g)
    assert np.all(seen == 1)


def test_group_weights_do_not_depend_on_the_world():
    one, two = tiny(1), tiny(2)
    w1, w2 = moe_dist.group_weights(one, 3, 0, "cpu")
    v1, v2 = moe_dist.group_weights(two, 3, 1, "cpu")
    assert torch.equal(w1[2:], v1) and torch.equal(w2[2:], v2)


def test_own_reference_is_the_moe_layer_of_the_rank_tokens():
    shape = tiny(2)
    r = route(shape, "zipf", 1.2, seed=2)
    x = moe_dist.own_tokens(shape, 2, 1, "cpu")
    ref = moe_dist.own_reference(shape, r, 1, x, torch.ones(2), seed=2)
    w1 = torch.cat([moe_dist.group_weights(shape, 2, g, "cpu")[0] for g in range(2)]).float()
    w2 = torch.cat([moe_dist.group_weights(shape, 2, g, "cpu")[1] for g in range(2)]).float()
    for t in range(shape.tokens):
        for k in range(shape.topk):
            e = int(r.topk_ids[shape.tokens + t, k])
            h = x[t].float() @ w1[e].t()
            act = (torch.nn.functional.silu(h[:64]) * h[64:]).to(torch.bfloat16).float()
            want = float(r.topk_weights[shape.tokens + t, k]) * (act @ w2[e].t())
            assert torch.allclose(ref[t, k], want, atol=1e-4, rtol=1e-4), (t, k)


# -- N real ranks ------------------------------------------------------------------------------

CONFIGS = {2: [moe_catalog.Config("tiny-ep-bf16", tiny(1), "zipf", 1.2, 0),
               moe_catalog.Config("tiny-ep-fp8", tiny(1, precision="fp8"), "balanced", 0.0, 1)],
           3: [moe_catalog.Config("tiny-ep3-bf16", tiny(1, experts=6), "hot", 0.5, 2)]}


def _runner_child(rank, world, port, buffers, out, sabotage):
    from hwkernels import moe_bench
    from hwkernels.ranks import Ranks

    with cpu_rank(rank, world, port, buffers, sabotage) as d:
        moe_bench.SETTINGS = {p: moe.KernelConfig(block_k=32) for p in ("bf16", "fp8")}
        moe_catalog.catalog = lambda: {c.name: c for c in CONFIGS[world]}
        moe.FusedMoE.distinct_sms = lambda self: True
        pooled = Ranks(d).pool({"kernel_us": float(rank + 1), "span_us": np.array([rank, rank])})
        assert pooled["kernel_us"] == world                            # the slowest rank's time
        assert pooled["span_us"].tolist() == [r for r in range(world) for _ in (0, 1)]
        names = ",".join(c.name for c in CONFIGS[world])
        rc = moe_bench.main(["--out", out, "--target", "peer", "--trials", "2", "--configs",
                             names, "--phases", "kernel"])
        assert rc == 0


@pytest.mark.parametrize("world", [2, 3])
def test_runner_on_n_ranks_checks_what_each_rank_received(world, tmp_path):
    out = tmp_path / "r.jsonl"
    cfgs = CONFIGS[world]
    nbytes = max(c.shape.tokens * c.shape.topk * c.shape.hidden * 2 for c in cfgs)
    buffers = shared_buffers(world, nbytes)
    spawn(_runner_child, world, buffers, str(out), False)
    recs = read_records(out)                                    # rank 0's records only
    assert [r["kind"] for r in recs] == ["kernel"] * 2 * len(cfgs)
    assert {(r["params"]["config"], r["params"]["schedule"]) for r in recs} == {
        (c.name, s) for c in cfgs for s in ("wave", "interleaved")}
    for r in recs:
        assert r["check"]["ok"], r["check"]
        assert r["params"]["ep"] == world and r["params"]["destination"] == "peer"
        assert r["platform"]["gpu_count"] == world
        assert r["stats"]["kernel_us"]["n"] == 2 and r["stats"]["kernel_nostamp_us"]["n"] == 2
    for b in buffers:       # the last run's Combine: every slot of every rank's tokens arrived
        got = b[:cfgs[-1].shape.tokens * 2 * 64 * 2].view(torch.bfloat16).float()
        assert bool(torch.isfinite(got).all()) and float(got.abs().max()) > 0


def test_stores_that_never_reach_their_owner_fail_the_receivers_check(tmp_path):
    out = tmp_path / "r.jsonl"
    buffers = shared_buffers(2, 12 * 2 * 64 * 2)
    spawn(_runner_child, 2, buffers, str(out), True)
    recs = read_records(out)
    assert recs and all(not r["check"]["ok"] and r["stats"] == {} for r in recs)
