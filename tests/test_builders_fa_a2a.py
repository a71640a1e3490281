"""The fa_a2a builder: the kernel's tile streams, the DES against the closed form in its regimes,
the shipped scenarios through the CLI, and one-line errors."""

import dataclasses
import json
import math

import numpy as np
import pytest

from xsim.attention.shape import AttentionShape
from xsim.builders import fa_a2a
from xsim.cli import main
from xsim.des import simulate
from xsim.load_gate import LoadGate
from xsim.params import resolve
from xsim.platform import CapacityModel, IssueModel, Platform


def toy(rate_gbps=10.0, t0_us=1.0, capacity_bytes=56 * 32768):
    return Platform(name="toy", drain_rate_gbps=rate_gbps, issue=IssueModel(t_fixed_us=t0_us),
                    capacity=CapacityModel(max_bytes=capacity_bytes), sms=64, gpus=1)


def params(**kw):
    base = dict(seq_len=8192, batch=1, heads=16, sp=8, producers=64, sigma_us_per_kv_tile=0.2,
                qloop_fixed_us=2.0, destination="host")
    return resolve(fa_a2a.PARAMS, {**base, **kw}, "test")


def run(p, platform, engine="simpy"):
    return fa_a2a.summarize(simulate(fa_a2a.build(p, platform), engine=engine, trace=False), p)


def test_streams_are_the_kernels_tiles_replayed():
    p = params(replays=2, producers=12)
    w = fa_a2a.build(p, toy())
    s = AttentionShape(seq_len=8192, batch=1, heads=16, sp=8, head_dim=128, producers=12)
    assert w.n_producers == 12 and w.n_tiles == 2 * s.n_tiles and w.staging_depth == 0
    assert w.bytes.sum() == 2 * s.remote_bytes.sum()
    for pid in (0, 5, 11):
        tiles = s.program_tiles(pid)
        got = w.bytes[w.offsets[pid]:w.offsets[pid + 1]]
        assert np.array_equal(got, np.tile(s.remote_bytes[tiles], 2))
    assert np.all(w.mainloop_us == 2.0 + 0.2 * 64)
    # one kernel boundary: every CTA's last tile of replay 0 signals, every first tile of replay 1 waits for all 12
    assert (w.signal_counter == 0).sum() == 12 and (w.wait_counter == 0).sum() == 12 and set(w.wait_value) <= {0, 12}
    assert fa_a2a.build(params(variant="fa-only"), toy()).bytes.sum() == 0
    cc = fa_a2a.build(params(variant="cc", t_lat_us=0.5), toy())
    assert cc.coupling == "xstage" and cc.load_gate == LoadGate(0.0, "link")        # the default fence: link
    gated = dataclasses.replace(toy(), load_gate=LoadGate(4096.0, "link"))
    assert fa_a2a.build(params(variant="cc", cc_fence="fifo+gate"), gated).load_gate == LoadGate(4096.0, "fifo-link")
    assert fa_a2a.build(params(variant="cc", cc_fence="fifo+gate"), toy()).load_gate == LoadGate(math.inf, "fifo-link")
    assert fa_a2a.build(params(variant="cc"), gated).load_gate == LoadGate(0.0, "link")
    assert np.all(cc.epilogue_us[cc.bytes > 0] == 0.5)
    own = fa_a2a.build(params(variant="cc", cc_fence="own"), toy())
    assert own.coupling == "completion-coupled" and own.load_gate is None
    assert fa_a2a.build(params(variant="cc", cc_fence="fifo"), toy()).load_gate == LoadGate(0.0, "fifo")


def test_fa_only_is_waves_times_the_qloop():
    p = params(variant="fa-only", seq_len=4096, producers=20)
    s = run(p, toy())
    assert s["kernel_us"]["mean"] == pytest.approx(s["t_fa_model_us"], rel=1e-12)
    assert s["t_fa_model_us"] == fa_a2a.predict(p, toy())["t_fa_model_us"] == 4 * (2.0 + 0.2 * 32)


@pytest.mark.parametrize("seq_len, capacity, sigma, regime", [
    (32768, 256 * 32768, 3.0, "gap"),        # G = 770 us > G* = 733 us: the issue floor only
    (8192, 56 * 32768, 0.2, "rate"),         # eq. 18: V_w/R - G - T_iss0 per wave
    (16384, 28 * 32768, 2.0, "capacity"),    # a CTA's share Q/K is below its tile: (V_w - Q_w)/R
])
def test_des_equals_closed_form_on_uniform_waves(seq_len, capacity, sigma, regime):
    """Each wave one head (K = M / b_m, 7/8 of its tiles remote), equal arbitration: the DES's
    steady replay is the closed form's T_FA + E_issue + E_drain, and T_FA + E_cc for cc."""
    plat = toy(capacity_bytes=capacity)
    k = seq_len // 128
    v_w, q_w = 7 / 8 * k * 32768, capacity * 7 / 8
    for variant, fence in (("fused", "link"), ("cc", "link"), ("cc", "fifo"), ("cc", "own")):
        p = params(variant=variant, seq_len=seq_len, producers=k, sigma_us_per_kv_tile=sigma, cc_fence=fence)
        des, cf = run(p, plat, engine="fast"), fa_a2a.predict(p, plat)
        rate_term, cap_term = (v_w / 1e4 - cf["g_qloop_us"]), (v_w - q_w) / 1e4
        assert (cf["e_drain_us"] == 0) == (regime == "gap")
        assert (cap_term > max(rate_term, 1.0)) == (regime == "capacity")
        want = cf["e_issue_us"] + cf["e_drain_us"] if variant == "fused" else cf["e_cc_us"]
        assert des["e_res_us"] == pytest.approx(want, rel=1e-6), (regime, variant, fence)
        assert des["kernel_us"]["mean"] == pytest.approx(cf["kernel_us"], rel=1e-6)


def _cc_fence_point(fence, engine, load_gate=None):
    """3 CTAs, weights 1 : 3 : 1, R = 1e4 B/us, T_iss0 = 1 us, G = 3.6 us, B = 32 KiB: CTA 0's first
    tile is the rank's own (no bytes), CTA 1's and 2's are remote; all three Q-loops end at G."""
    plat = Platform(name="toy", drain_rate_gbps=10.0, issue=IssueModel(t_fixed_us=1.0),
                    capacity=CapacityModel(max_bytes=56 * 32768), sms=64, gpus=1, producer_weights=(1.0, 3.0, 1.0),
                    load_gate=load_gate)
    p = params(variant="cc", cc_fence=fence, seq_len=1024, heads=8, producers=3, replays=1)
    w = fa_a2a.build(p, plat)
    t = simulate(w, engine=engine, trace=False).times
    return w, t, [t.mainloop_start[w.offsets[c]:w.offsets[c + 1]] for c in range(3)]


@pytest.mark.parametrize("fence", fa_a2a.CC_FENCES)
def test_cc_fence_semantics_by_hand_in_both_engines(fence):
    """link: every fence after a remote tile ends when the stage is empty, CTA 0's stores (issued
    at 2G, after its own tile's fence saw an empty stage at G) included: G + 3B/R. fifo: CTA 1's and
    2's fences wait for the 2B accepted when they began (G + 2B/R), CTA 0's for all 3B; so does
    fifo+gate on a platform without a load gate. own: CTA 1 drains at 3/4 R until CTA 0 joins at
    2G, then at 3/5 R; own-eq (equal shares): at R/2, then R/3."""
    w, t, start = _cc_fence_point(fence, "simpy")
    g, b, r = 3.6, 32768.0, 1e4
    assert np.all(w.bytes[w.offsets[1]:w.offsets[3]] == b) and w.bytes[0] == 0 and w.bytes[1] == b
    assert start[0][1] == pytest.approx(g, abs=1e-9)                       # an own tile's fence: nothing ahead
    if fence == "link":
        assert [s[1] for s in start[1:]] + [start[0][2]] == pytest.approx([g + 3 * b / r] * 3, rel=1e-12)
    elif fence in ("fifo", "fifo+gate"):
        assert [s[1] for s in start[1:]] == pytest.approx([g + 2 * b / r] * 2, rel=1e-12)
        assert start[0][2] == pytest.approx(g + 3 * b / r, rel=1e-12)
    elif fence == "own":
        assert start[1][1] == pytest.approx(2 * g + (b - 0.75 * r * g) / (0.6 * r), rel=1e-12)
    else:   # own-eq: CTAs 1 and 2 drain at R/2 each until CTA 0 joins at 2G, then at R/3
        assert start[1][1] == pytest.approx(2 * g + (b - 0.5 * r * g) / (r / 3), rel=1e-12)
        assert start[2][1] == pytest.approx(start[1][1], rel=1e-12)
    _, fast, _ = _cc_fence_point(fence, "fast")
    for name, column in t.columns().items():                                  # bit-identical engines
        assert np.array_equal(column, fast.columns()[name], equal_nan=True), name


@pytest.mark.parametrize("engine", ["simpy", "fast"])
def test_cc_fifo_then_gate_by_hand(engine):
    """fifo+gate with a link gate of B/2: CTA 1's and 2's fences end at G + 2B/R, when CTA 0's B
    (issued from 2G on) is still in the stage, so their loads wait on until the total falls to B/2:
    G + (3B - B/2)/R; CTA 0's fence waits for all 3B and then finds the stage empty: G + 3B/R, as
    with fifo alone (and link, threshold 0, holds all three to G + 3B/R)."""
    g, b, r = 3.6, 32768.0, 1e4
    _, _, start = _cc_fence_point("fifo+gate", engine, LoadGate(b / 2, "link"))
    assert [s[1] for s in start[1:]] == pytest.approx([g + 2.5 * b / r] * 2, rel=1e-12)
    assert start[0][2] == pytest.approx(g + 3 * b / r, rel=1e-12)
    _, _, fifo = _cc_fence_point("fifo", engine, LoadGate(b / 2, "link"))
    assert [s[1] for s in fifo[1:]] == pytest.approx([g + 2 * b / r] * 2, rel=1e-12)   # no gate after the fence


def test_gap_above_threshold_leaves_only_issue_in_both_models():
    p = params(seq_len=32768, producers=64, sigma_us_per_kv_tile=1.0)  # G = 258 us > G* = 208.7 us
    plat = toy(capacity_bytes=64 * 32768)
    cf = fa_a2a.predict(p, plat)
    assert cf["e_drain_us"] == 0.0 and cf["g_qloop_us"] > cf["g_star_us"]
    assert run(p, plat, engine="fast")["e_res_us"] == pytest.approx(cf["e_issue_us"], rel=1e-9)


def test_engines_agree_on_a_mixed_point():
    p = params(seq_len=4096, producers=20, replays=2)
    plat = toy(capacity_bytes=10 * 32768)
    assert run(p, plat, "fast")["kernel_us"]["mean"] == pytest.approx(run(p, plat, "simpy")["kernel_us"]["mean"],
                                                                      rel=1e-9)


def test_paced_stream_moves_every_remote_byte_once_in_chunks_over_the_next_qloop():
    p = params(variant="fused-paced", seq_len=8192, producers=12, replays=1, pace=8)
    s = AttentionShape(seq_len=8192, batch=1, heads=16, sp=8, head_dim=128, producers=12)
    w = fa_a2a.build(p, toy())
    assert w.bytes.sum() == s.remote_bytes.sum()          # the same bytes as fused
    n_remote = s.n_tiles - s.n_tiles // s.sp
    for pid in (0, 7):
        tiles = list(s.program_tiles(pid))
        ml, nb = fa_a2a.paced_stream(s, pid, fa_a2a.qloop_of(p), 8)
        # 64 KV steps, stride 8: cuts after steps 0, 8, ..., 56, then the rest of the Q-loop
        assert ml[:9].tolist() == pytest.approx([2.0 + 0.2] + [0.2 * 8] * 7 + [0.2 * 7])
        assert ml.sum() == pytest.approx(len(tiles) * (2.0 + 0.2 * 64))   # Q-loops unchanged
        remote = [t < n_remote for t in tiles]                            # remote-first order
        assert remote == sorted(remote, reverse=True)
        # tile j's sub-tiles carry tile j-1's chunks: none during the first Q-loop
        assert nb[:9].sum() == 0 and set(nb[9:18]) == ({4096.0, 0.0} if remote[0] else {0.0})


def test_paced_chunks_the_qloop_does_not_reach_go_at_its_end():
    s = AttentionShape(seq_len=2048, batch=1, heads=16, sp=8, head_dim=128, block_n=512, producers=4)  # 4 KV steps
    from xsim.attention.qloop import QLoop
    ml, nb = fa_a2a.paced_stream(s, 0, QLoop(1.0, 0.5, 512), 8)
    assert ml[:5].tolist() == [1.5, 1.0, 1.0, 1.0, 0.0]                 # cuts after steps 0..3, nothing left
    assert nb[5:10].tolist() == [4096.0] * 4 + [4 * 4096.0]            # 4 chunks in the loop, 4 at its end


def test_paced_hides_what_fused_exposes_above_the_capacity_share():
    """A 32 KiB tile above a CTA's share of Q costs fused a capacity term at every M; spread over
    the next Q-loop in 4 KiB chunks it drains under it (both models)."""
    plat = toy(capacity_bytes=16 * 32768)
    # N = 2: the remote half of the tiles first, then the local half; G = 386 us > V_w/R = 210 us
    fused = params(seq_len=16384, producers=64, sp=2, sigma_us_per_kv_tile=3.0)
    paced = params(seq_len=16384, producers=64, sp=2, sigma_us_per_kv_tile=3.0, variant="fused-paced")
    assert run(fused, plat, "fast")["e_res_us"] > 50
    issue_only = 8 * 8 * 1.0                     # 8 remote waves x 8 chunks x T_iss0 (1 us)
    assert run(paced, plat, "fast")["e_res_us"] == pytest.approx(issue_only, rel=1e-9)
    cf = fa_a2a.predict(paced, plat)
    assert cf["kernel_us"] - cf["t_fa_model_us"] == pytest.approx(issue_only)   # rate term 0: G > V_w/R
    assert run(paced, plat, "fast")["kernel_us"]["mean"] == pytest.approx(
        run(paced, plat, "simpy")["kernel_us"]["mean"], rel=1e-9)


def _cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_simulate_shipped_paper_scenario(capsys):
    code, out, _ = _cli(capsys, "simulate", "fa-a2a-paper", "--platform", "paper-8gpu", "--engine", "fast",
                        "--set", "seq_len=16384", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["params"]["seq_len"] == 16384 and doc["closed_form"]["m_ub_star_tokens"] == pytest.approx(972.8, abs=1)
    assert doc["e_res_us"] == pytest.approx(doc["closed_form"]["e_issue_us"], rel=0.2)  # far above M_ub*


def test_sweep_over_seq_len_and_block_m(capsys, tmp_path):
    code, out, err = _cli(capsys, "sweep", "fa-a2a-paper", "--platform", "paper-8gpu", "--grid",
                          "seq_len=8192,16384", "--grid", "block_m=64,128", "--jobs", "1", "--no-plots",
                          "--out", str(tmp_path / "s"), "--json")
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "s" / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all("kernel_us_mean" in r and "pred_m_ub_star_tokens" in r for r in rows)


@pytest.mark.parametrize("assignment, message", [
    ("heads=30", '"heads" (30) must be divisible by "sp" N (8)'),
    ("seq_len=8196", '"seq_len" M (8196) must be divisible by "sp" N (8)'),
    ("seq_len=8704", 'must be divisible by the tile "block_m" (128)'),
    ("head_dim=96", '"head_dim" must be one of (64, 128), got 96'),
    ("variant=serial", '"variant" must be one of fused, cc, fa-only'),
    ("cc_fence=sys", '"cc_fence" must be one of link, fifo, own, fifo+gate, own-eq'),
    ("tile_order=backwards", '"tile_order" must be one of default, remote-first'),
])
def test_bad_points_are_one_line_exit_2(capsys, assignment, message):
    code, out, err = _cli(capsys, "simulate", "fa-a2a-paper", "--platform", "paper-8gpu", "--set", assignment)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_the_qloop_spread_draws_the_same_factor_per_tile_in_every_variant():
    import numpy as np

    from xsim.builders import fa_a2a
    from xsim.params import resolve
    from xsim.platform import resolve_platform

    plat = resolve_platform("h200-pcie-host")
    base = {"seq_len": 2048, "heads": 8, "sp": 4, "producers": 16, "sigma_us_per_kv_tile": 2.0, "qloop_fixed_us": 2.0}
    w = {v: fa_a2a.build(resolve(fa_a2a.PARAMS, {**base, "variant": v, "qloop_cv": 0.05}, "t"), plat)
         for v in ("fa-only", "fused", "cc")}
    assert np.array_equal(w["fa-only"].mainloop_us, w["fused"].mainloop_us)
    assert np.array_equal(w["fused"].mainloop_us, w["cc"].mainloop_us)
    alike = fa_a2a.build(resolve(fa_a2a.PARAMS, {**base, "variant": "fused"}, "t"), plat)
    assert np.all(alike.mainloop_us == alike.mainloop_us[0])                 # default: no spread
    ratio = w["fused"].mainloop_us / alike.mainloop_us
    assert ratio.std() == pytest.approx(0.05, rel=0.3) and ratio.mean() == pytest.approx(1.0, abs=0.02)


def test_remote_first_order_moves_the_same_bytes_and_ends_on_the_ranks_own_tiles():
    s = AttentionShape(seq_len=8192, batch=1, heads=16, sp=8, head_dim=128, producers=12)
    fused = fa_a2a.build(params(producers=12), toy())
    rf = fa_a2a.build(params(producers=12, tile_order="remote-first"), toy())
    assert rf.bytes.sum() == fused.bytes.sum() == 3 * s.remote_bytes.sum()
    n_remote = s.n_tiles - s.n_tiles // s.sp
    for pid in (0, 5, 11):
        pos = s.program_tiles(pid)
        got = rf.bytes[rf.offsets[pid]:rf.offsets[pid] + len(pos)]
        assert np.array_equal(got > 0, pos < n_remote)      # the last positions: the rank's own slice
    cc = fa_a2a.build(params(producers=12, variant="cc", tile_order="remote-first"), toy())
    assert np.array_equal(cc.bytes, rf.bytes)


def test_stagger_delays_each_launchs_first_tile_by_program():
    """stagger_us: in every replay program p's first tile is stagger * p / K longer; nothing else
    moves, fa-only and fused-paced ignore it, and a stagger separates the waves' bursts."""
    base, k = fa_a2a.build(params(replays=3, producers=8), toy()), 8
    w = fa_a2a.build(params(replays=3, producers=8, stagger_us=16.0), toy())
    extra = w.mainloop_us - base.mainloop_us
    for pid in range(k):
        lo, hi = w.offsets[pid], w.offsets[pid + 1]
        per = (hi - lo) // 3
        want = np.zeros(hi - lo)
        want[::per] = 16.0 * pid / k
        assert np.allclose(extra[lo:hi], want), pid
    for variant in ("fa-only", "fused-paced"):
        a = fa_a2a.build(params(variant=variant, stagger_us=16.0), toy())
        assert np.array_equal(a.mainloop_us, fa_a2a.build(params(variant=variant), toy()).mainloop_us)
