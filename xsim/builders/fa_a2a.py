"""FlashAttention fused with the Ulysses post-attention All-to-All (Sec. 4.3) as tile streams.

One rank's persistent attention kernel: each of its K CTAs is a producer whose stream is its
output tiles in the kernel's grid-stride order (:class:`~xsim.attention.shape.AttentionShape`,
index math from ``hwkernels.fa_layout``). A tile is one Q-loop mainloop of
``qloop_fixed_us + sigma_us_per_kv_tile * ceil(M / b_n)``, then its output stores:
``block_m * head_dim * 2`` bytes into the X-Stage when its owner is another rank, none for the
rank's own slice. The CTA that computes a tile issues its stores itself (``staging_depth = 0``):

- ``fused``: X-Stage coupling, the CTA moves on once its stores are accepted;
- ``cc``: completion-coupled, each tile's stores are fenced at system scope before the CTA
  starts its next tile; ``t_lat_us`` is a fixed completion latency before the stores. What the
  fence waits for is ``cc_fence`` (docs/fa-a2a-report.md, "What a system-scope fence waits for"):
  ``link`` (default), until the X-Stage is empty, every CTA's bytes, also those accepted while it
  waits (the host link's fence microbenchmark: every CTA's fence ends when the link has drained;
  the fencelate suites: not when a large late burst dominates);
  ``fifo``, until the stage has drained what it had accepted when the fence began; ``own``, until
  the CTA's own bytes have drained (completion coupling in the engines). ``link`` and ``fifo``
  are X-Stage coupling plus a load gate of threshold 0 and that scope on every next Q-loop
  (it replaces the platform's gate, which a release at an empty link always passes);
  ``own`` is ``completion-coupled``, which the engines never gate; ``fifo+gate``, the fifo
  fence, then the next Q-loop's loads held by the platform's load gate at link scope, as every
  fused Q-loop's are (the gate scope ``fifo-link``, :mod:`xsim.load_gate`; rejected by the
  fencelate microbenchmark); ``own-eq``, ``own`` with every CTA's drain share equal (the profile's
  per-SM weights not applied to cc's drain);
- ``fa-only``: the same tiles with no remote bytes;
- ``tile_order`` (fused, cc): ``default`` as above, or ``remote-first`` (the kernels' ORDER 1,
  :func:`hwkernels.fa_layout.remote_first_coords`): the other owners' tiles first, so the last
  waves store to HBM and the link drains the earlier ones under their Q-loops;
- ``stagger_us`` (fused, cc): in every launch program p begins its first tile ``stagger_us * p / K``
  late (the Gluon kernel's ``STAGGER_NS``: its consumers wait on ``%globaltimer``, its producer
  loads the first stages meanwhile), so the programs' tile boundaries, and their bursts, fall
  apart instead of together;
- ``fused-paced``: the kernel's MODE 3 (``hwkernels/fa_kernels.py``): tiles in the remote-first
  order (:func:`hwkernels.fa_layout.remote_first_coords`: other owners' tiles first), a remote
  tile staged in HBM and its stores issued as ``pace`` row chunks during the CTA's *next*
  Q-loop, chunk c after KV step ``c * stride`` (``stride = max(1, kv_tiles // pace)``), the
  chunks that Q-loop does not reach at its end, a CTA's last staged tile at its stream's end.
  Each Q-loop is then split into sub-tiles (a Q-loop segment, then one chunk's stores).

The kernel is replayed ``replays`` times back to back (CUDA-graph replay): a kernel boundary
is a grid barrier that every CTA reaches at its last tile's issue end (at its drain end for
``cc``, or when ``boundary_waits_drain``), so a replay's bursts drain while the next replay
computes. ``kernel_us`` is the time per replay after the first.

A Q-loop loads K and V tiles (``mainloop_loads``): with a platform load gate
(:mod:`xsim.load_gate`) it waits for the X-Stage's occupancy to fall to its threshold.
"""

from __future__ import annotations

import math

import numpy as np

from xsim.attention.clock import MAX_ITER
from xsim.attention.predict import paced_residual_us, predict as closed_form
from xsim.attention.qloop import QLoop
from xsim.attention.shape import DESTINATIONS, AttentionShape, drain_peers
from xsim.load_gate import LoadGate
from xsim.params import Param
from xsim.platform import Platform
from xsim.spread import factors
from xsim.stats import Stats
from xsim.units import gbps_to_bytes_per_us
from xsim.workload import Workload, XStageParams

VARIANTS = ("fused", "cc", "fa-only", "fused-paced")
ORDERS = ("default", "remote-first")   # hwkernels.fa.ORDERS
CLOCK_LAWS = ("none", "records")
CC_FENCES = ("link", "fifo", "own", "fifo+gate", "own-eq")   # what cc's fence waits for: the stage empty, the
#                 bytes ahead, its own; the bytes ahead, then the platform's gate; its own under equal drain shares

PARAMS = {
    "variant": Param("str", "fused", "fused (X-Stage), cc (completion-coupled), fa-only, or fused-paced "
                     "(stores spread over the next Q-loop)", choices=VARIANTS),
    "seq_len": Param("int", 16384, "sequence length M (tokens)", minimum=1),
    "batch": Param("int", 1, "batch", minimum=1),
    "heads": Param("int", 32, "attention heads H over all ranks", minimum=1),
    "sp": Param("int", 4, "Ulysses sequence-parallel degree N (owners)", minimum=1, maximum=1024),
    "head_dim": Param("int", 128, "head dimension d (64 or 128)", minimum=1),
    "block_m": Param("int", 128, "query rows per output tile b_m", minimum=1),
    "block_n": Param("int", 128, "KV rows per Q-loop step b_n", minimum=1),
    "producers": Param("int", 132, "persistent CTAs K", minimum=1, maximum=100_000),
    "destination": Param("str", "host", "host (one link to pinned host memory) or peer (N - 1 GPUs)",
                         choices=DESTINATIONS),
    "sigma_us_per_kv_tile": Param("us", 0.79, "Q-loop time per KV tile sigma", minimum=0, exclusive_min=True),
    "qloop_fixed_us": Param("us", 0.0, "fixed part of a tile's Q-loop (may be fitted negative)"),
    "replays": Param("int", 3, "back-to-back kernel replays (the first is warm-up)", minimum=1, maximum=1000),
    "t_lat_us": Param("us", 0.0, "cc: fixed completion latency per tile (eq. 17 T_lat)", minimum=0),
    "boundary_waits_drain": Param("bool", False, "a kernel boundary waits for the replay's stores to drain"),
    "qloop_cv": Param("float", 0.0, "spread of a tile's Q-loop, coefficient of variation (0: every tile alike; "
                      "the report fits it on the FA-only records)", minimum=0),
    "spread_seed": Param("int", 0, "seed of the per-tile spread (a hash of each tile's identity)", minimum=0),
    "pace": Param("int", 8, "fused-paced: row chunks per tile, spread over the next Q-loop", minimum=1, maximum=1024),
    "tile_order": Param("str", "default", "fused, cc, fa-only: the kernels' tile order, default (fa_layout.tiles) "
                        "or remote-first (the other owners' tiles first, the rank's own last, as fused-paced "
                        "always runs)", choices=ORDERS),
    "cc_fence": Param("str", "link", "cc: what each tile's system-scope fence waits for: link (the X-Stage empty, "
                      "every CTA's bytes), fifo (the bytes accepted before it), own (the CTA's own bytes), "
                      "fifo+gate (the bytes accepted before it, then the next Q-loop's loads held by the "
                      "platform's load gate at link scope, as fused's are), own-eq (own, every CTA's drain share "
                      "equal)",
                      choices=CC_FENCES),
    "stagger_us": Param("us", 0.0, "fused, cc: each launch's program p starts its first tile stagger_us * p / K "
                        "late (staggered program phases: the kernels' STAGGER_NS)", minimum=0),
    "clock_law": Param("str", "none", "the SM clock: none (every variant at the Q-loop's clock) or records (the "
                       "power cap's clock law of the platform's shipped duty records: each variant's clock and "
                       "time solved together, the Q-loop being FA-only's at fa_clock_mhz; xsim.attention.clocked)",
                       choices=CLOCK_LAWS),
    "fa_clock_mhz": Param("float", 0.0, "clock_law records: FA-only's SM clock at the cap, the clock of the Q-loop "
                          "(0: the law's FA-only anchor at M, FA-only alone in the same duty runs)", minimum=0),
}


def shape_of(params: dict) -> AttentionShape:
    return AttentionShape(seq_len=params["seq_len"], batch=params["batch"], heads=params["heads"], sp=params["sp"],
                          head_dim=params["head_dim"], block_m=params["block_m"], block_n=params["block_n"],
                          producers=params["producers"])


def qloop_of(params: dict) -> QLoop:
    return QLoop(params["sigma_us_per_kv_tile"], params["qloop_fixed_us"], params["block_n"])


def _gap_us(params: dict, shape: AttentionShape) -> float:
    gap = qloop_of(params).gap_us(shape.seq_len)
    if not gap > 0:
        raise ValueError(f'the Q-loop gap at M = {shape.seq_len} is {gap:.4g} us: it must be > 0')
    return gap


def size(params: dict, platform: Platform) -> tuple[int, float]:
    """Tiles of the workload and an upper bound of its simulated time (before building it): per
    replay, every wave's Q-loop, completion latency and issue, plus draining all its bytes."""
    shape = shape_of(params)
    k = shape.programs
    rate = platform.effective_drain_rate_gbps(drain_peers(params["destination"], shape.sp))
    per_replay_us = (shape.waves * (_gap_us(params, shape) + params["t_lat_us"]
                                    + platform.t_iss0_us(k, float(shape.tile_bytes)))
                     + shape.n_tiles * shape.tile_bytes / gbps_to_bytes_per_us(rate))
    per_tile = min(params["pace"], shape.kv_tiles) + 1 if params["variant"] == "fused-paced" else 1
    tiles = (shape.n_tiles * per_tile + shape.programs) * params["replays"]
    return tiles, params["replays"] * per_replay_us


def _remote_first(shape: AttentionShape, pid: int) -> np.ndarray:
    """bool per tile of CTA ``pid`` in the remote-first order (:func:`hwkernels.fa_layout.
    remote_first_coords`): whether it is another owner's (the first n_tiles - n_tiles / N positions)."""
    return shape.program_tiles(pid) < shape.n_tiles - shape.n_tiles // shape.sp


def paced_stream(shape: AttentionShape, pid: int, qloop: QLoop, pace: int) -> tuple[np.ndarray, np.ndarray]:
    """(mainloop_us, bytes) of CTA ``pid``'s sub-tiles in one launch of the fused-paced kernel.

    Tile j's Q-loop is cut at the chunk points (after KV step ``c * stride``: the fixed part and
    one step before the first cut, ``stride`` steps between cuts, the rest after the last); after
    cut c the CTA stores chunk c of tile j - 1 if that tile is remote, the chunks the Q-loop did
    not reach at its end. The stream ends with the last tile's chunks if it is remote."""
    kv, sigma = shape.kv_tiles, qloop.sigma_us_per_kv_tile
    stride = max(1, kv // pace)
    cuts = [c * stride for c in range(pace) if c * stride < kv]       # KV steps with a chunk after them
    seg = np.diff(np.array([0] + [c + 1 for c in cuts] + [kv], dtype=float)) * sigma
    seg[0] += qloop.fixed_us
    chunk = shape.tile_bytes / pace
    remote = list(_remote_first(shape, pid))
    mainloop, nbytes = [], []
    for prev in ([False] + remote)[:len(remote)]:   # tile j carries tile j - 1's chunks
        mainloop.extend(seg)
        nbytes.extend([chunk * prev] * len(cuts) + [chunk * (pace - len(cuts)) * prev])
    if remote and remote[-1]:
        mainloop.append(0.0)
        nbytes.append(float(shape.tile_bytes))
    return np.array(mainloop), np.array(nbytes)


def _streams(params: dict, shape: AttentionShape, gap: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """(mainloop_us, bytes) per CTA for one launch."""
    if params["variant"] == "fused-paced":
        return [paced_stream(shape, p, qloop_of(params), params["pace"]) for p in range(shape.programs)]
    out = []
    for p in range(shape.programs):
        order = shape.program_tiles(p)      # positions in the kernel's order
        if params["variant"] == "fa-only":
            nbytes = np.zeros(len(order))
        elif params["tile_order"] == "remote-first":
            nbytes = np.where(_remote_first(shape, p), float(shape.tile_bytes), 0.0)
        else:
            nbytes = shape.remote_bytes[order]
        out.append((np.full(len(order), gap), nbytes))
    return out


def _spread(streams, reps: int, params: dict) -> np.ndarray:
    """Each (sub-)tile's Q-loop factor (:mod:`xsim.spread`), keyed by (program, tile in its
    stream, replay, paced or not): the same tile draws the same factor in every variant but
    fused-paced, whose sub-tiles are other pieces of work."""
    ids = [np.stack([np.full(len(m) * reps, p), np.tile(np.arange(len(m)), reps),
                     np.repeat(np.arange(reps), len(m)),
                     np.full(len(m) * reps, int(params["variant"] == "fused-paced"))], axis=1)
           for p, (m, _) in enumerate(streams)]
    return factors(np.concatenate(ids), params["qloop_cv"], params["spread_seed"])


def build(params: dict, platform: Platform) -> Workload:
    shape = shape_of(params)
    gap, k, reps = _gap_us(params, shape), shape.programs, params["replays"]
    variant = params["variant"]
    streams = _streams(params, shape, gap)
    counts = np.array([len(m) * reps for m, _ in streams], dtype=np.int64)
    mainloop = np.concatenate([np.tile(m, reps) for m, _ in streams]) * _spread(streams, reps, params)
    if params["stagger_us"] > 0 and variant in ("fused", "cc"):   # each launch's first tile, program p
        heads = np.concatenate([[0], np.cumsum(counts)[:-1]])
        for p, (h, c) in enumerate(zip(heads, counts)):
            mainloop[h:h + c:c // reps] += params["stagger_us"] * p / k
    nbytes = np.concatenate([np.tile(b, reps) for _, b in streams])
    n = len(mainloop)
    store_bytes = shape.tile_bytes / (params["pace"] if variant == "fused-paced" else 1)   # one store group
    last = np.zeros(n, dtype=bool)   # a CTA's last tile of each replay: it arrives at the boundary
    first = np.zeros(n, dtype=bool)  # a CTA's first tile of a replay after the first: it waits for it
    replay = np.zeros(n, dtype=np.int64)
    start = 0
    for c in counts:
        per = c // reps
        replay[start:start + c] = np.repeat(np.arange(reps), per)
        last[start + per - 1:start + c:per] = True
        first[start + per:start + c:per] = True
        start += c
    coupled = variant == "cc"
    coupling, gate = _coupling(params, platform)
    signal = last & (replay < reps - 1)
    rate = platform.effective_drain_rate_gbps(drain_peers(params["destination"], shape.sp))
    return Workload(
        offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        producer_gpu=np.zeros(k, dtype=np.int64),
        kind=(nbytes > 0).astype(np.int64), kind_names=("local", "remote"),
        mainloop_us=mainloop,
        epilogue_us=np.where(coupled & (nbytes > 0), params["t_lat_us"], 0.0),
        bytes=nbytes,
        t_iss0_us=np.full(n, platform.t_iss0_us(k, store_bytes)),
        release_us=np.zeros(n),
        wait_counter=np.where(first, replay - 1, -1).astype(np.int64),
        wait_value=np.where(first, k, 0).astype(np.int64),
        signal_counter=np.where(signal, replay, -1).astype(np.int64),
        signal_on_drain=signal & (coupled or params["boundary_waits_drain"]),
        n_counters=max(reps - 1, 0),
        xstages=(XStageParams(gbps_to_bytes_per_us(rate), platform.capacity_bytes(k)),),
        staging_depth=0,
        coupling=coupling,
        producer_weight=np.ones(k) if coupled and params["cc_fence"] == "own-eq"
        else np.asarray(platform.weights_for(k), dtype=float),
        mainloop_loads=True, load_gate=gate,   # a Q-loop loads K and V tiles
    )


def _coupling(params: dict, platform: Platform) -> tuple[str, LoadGate | None]:
    """The workload's coupling and load gate: cc's fence (``cc_fence``) as completion coupling
    (own) or as X-Stage coupling with a threshold-0 gate of that scope on every Q-loop."""
    if params["variant"] != "cc":
        return "xstage", platform.load_gate
    if params["cc_fence"] in ("own", "own-eq"):
        return "completion-coupled", platform.load_gate
    if params["cc_fence"] == "fifo+gate":
        then = platform.load_gate.threshold_bytes if platform.load_gate is not None else math.inf
        return "xstage", LoadGate(then, "fifo-link")
    return "xstage", LoadGate(0.0, params["cc_fence"])


def replay_ends_us(result, params: dict) -> np.ndarray:
    """When every CTA has finished each replay (its last tile's issue end, or drain end where the
    boundary waits for the drain): the kernel boundaries."""
    w, t = result.workload, result.times
    reps = params["replays"]
    on_drain = params["variant"] == "cc" or params["boundary_waits_drain"]
    done = np.maximum(t.issue_end, t.drain_end) if on_drain else t.issue_end
    ends = np.zeros(reps)
    for p in range(w.n_producers):
        lo, hi = w.offsets[p], w.offsets[p + 1]
        per = (hi - lo) // reps
        ends = np.maximum(ends, done[lo + per - 1:hi:per])
    return ends


def predict(params: dict, platform: Platform) -> dict:
    """The closed form for the same point (eqs. 17-20) with the modeled FA-only time."""
    shape = shape_of(params)
    _gap_us(params, shape)
    cf = closed_form(shape, qloop_of(params), platform, params["destination"], t_lat_us=params["t_lat_us"])
    if params["variant"] == "fused-paced":
        extra = paced_residual_us(shape, qloop_of(params), platform, params["pace"], params["destination"])
    else:
        extra = {"fused": cf.e_res_us, "cc": cf.e_cc_us, "fa-only": 0.0}[params["variant"]]
    return {"kernel_us": cf.t_fa_model_us + extra, "t_fa_model_us": cf.t_fa_model_us, "e_issue_us": cf.e_issue_us,
            "e_drain_us": cf.e_drain_us, "e_cc_us": cf.e_cc_us, "g_qloop_us": cf.g_qloop_us,
            "g_star_us": cf.g_star_us, "m_ub_star_tokens": cf.m_ub_star_tokens, "waves": cf.waves}


def runs(params: dict) -> int:
    """DES runs per point: one, or with the clock law FA-only's and at most every iteration's."""
    return 1 if params["clock_law"] == "none" else 1 + MAX_ITER


def simulate(params: dict, platform: Platform, engine: str = "fast", trace: bool = True):
    """(result, summary) of the variant: :func:`build` and :func:`summarize`, or with ``clock_law``
    "records" at the clock the power cap gives it (:func:`xsim.attention.clocked.simulate`)."""
    if params["clock_law"] != "none":
        from xsim.attention import clocked

        return clocked.simulate(params, platform, engine, trace)
    from xsim.des import simulate as run

    result = run(build(params, platform), engine=engine, trace=trace)
    return result, summarize(result, params)


def t_fa_model_us(params: dict) -> float:
    """FA-only's modeled time: every wave's Q-loop."""
    shape = shape_of(params)
    return shape.waves * _gap_us(params, shape)


def summarize(result, params: dict) -> dict:
    ends = replay_ends_us(result, params)
    per_replay = np.diff(np.concatenate([[0.0], ends]))
    steady = per_replay[1:] if len(per_replay) > 1 else per_replay
    t_fa = t_fa_model_us(params)
    kernel = Stats.of(steady)
    remote = result.workload.bytes > 0
    return {
        "kernel_us": kernel.to_dict(),
        "first_replay_us": float(per_replay[0]),
        "t_fa_model_us": t_fa,
        "e_res_us": kernel.mean - t_fa,
        "issue_us": Stats.of(result.issue_us[remote]).to_dict(),
        "stall_us": result.stall_stats().to_dict(),
        "makespan_us": result.makespan_us,
    }
