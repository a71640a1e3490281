"""Runner: FlashAttention fused with the Ulysses post-attention A2A, one record per (variant, M).

    python -m hwkernels.fa_bench --out RECORDS.jsonl --target host [--suite full|quick]
    (xsim bench fa-a2a --target host --nproc 1 starts it through hwkernels.launch;
     --target peer --nproc N: N ranks under torchrun, Ulysses SP = N, see fa_dist.py)

On one GPU (target host) the rank is 0 of N virtual owners: owner 0's slice stays in local HBM,
the N-1 others live in mapped pinned host memory and go over PCIe. Every variant of
fa_variants.VARIANTS runs on the same shape; timing as the paper does: CUDA events over a
CUDA-graph replay of `slots` back-to-back launches (launch i into ring slot i, fresh
addresses), one synchronization after the replay, per-launch time kept; poison before and a
receiver-side check after every run (harness.measure), warm-up runs checked and dropped.
fused, cc and fa-only also run once instrumented per trial (per-tile store span, Q-loop time, and
the Q-loops' p10-p90 width over their mean between the programs of a wave: fa_waves.wave_stats).
Records: experiment "fa-a2a", FA_CONTRACT.md. A short table is printed last.
--target peer (N >= 2 ranks, fa_dist.py; never run on GPUs so far, tested on the CPU): sp = N
(--sp is ignored), rank r computes its H/N heads and stores each tile into its owner's
symmetric buffer (its own slice into its own); every variant; each owner checks what it
received after a barrier; times are per-trial maxima over ranks; rank 0 writes the records.
"""

import os
import sys

import numpy as np

from . import fa, fa_dist, fa_layout, fa_paired, records
from .destination import H200_L2_BYTES, RING_L2_MULTIPLE, ring_bursts
from .fa import FAShape
from .fa_bench_args import SUITES, kernel_config, parse_args, shapes  # noqa: F401 (the runner's CLI)
from .fa_stagger import design_config, design_platform
from .fa_tables import rows_from_records, table, tile_table
from .fa_variants import GLUON_VARIANTS, INSTRUMENTED, VARIANTS, Case, record_kind, tile_times
from .fa_waves import wave_stats
from .platform_info import smi_sm_clock_mhz
from .ranks import SOLO

RING_BYTES = RING_L2_MULTIPLE * H200_L2_BYTES   # fresh host addresses: a line is rewritten after >= 4x L2
MAX_SLOTS = 32
TARGET_RUN_US = 4000.0              # a graph replay long enough for event timing


def _host_view(nbytes: int, device):
    from .destination import host_buffer

    return host_buffer(nbytes, device)


def slots_for(shape: FAShape) -> int:
    """Ring slots so that >= RING_BYTES of remote stores separate two writes of one line."""
    written = shape.out_bytes * (shape.sp - 1) // shape.sp
    return ring_bursts(written, MAX_SLOTS)


def host_bytes_for(shapes_: list[FAShape]) -> int:
    return max(slots_for(s) * s.remote_bytes for s in shapes_)


def measure_variant(case: Case, variant: str, repeats: int, instrument: bool = True, steady_s: float = 0.0):
    """harness.measure over graph replays of one variant: (Measurement, replays, graphed).
    N ranks (case.ranks): barriers around every run, times and checks over every rank."""
    from .harness import measure

    run, replays, graphed, kw = prepare_variant(case, variant, instrument, steady_s)
    return measure(run, repeats=repeats, warmup=1, **kw), replays, graphed


def prepare_variant(case: Case, variant: str, instrument: bool = True, steady_s: float = 0.0):
    """One variant ready to time: (run, replays, graphed, harness.measure keywords); run()
    times one graph replay of `replays` rings (and, instrumented, one stamped launch).
    steady_s > 0: before every trial the same rings run back to back for about that long,
    untimed (harness.measure's heat, after the poison), so the timed replay runs at the
    power-capped clock the kernel holds when it runs on, not at the boost that an idle GPU, or
    the low-power poisoning of the host buffers over PCIe, gives the launch after it."""
    import torch

    from .harness import capture_graph, graph_replay_us

    rk = getattr(case, "ranks", SOLO)
    ring = case.ring(variant)
    try:
        graph = capture_graph(ring)
    except RuntimeError:              # not capturable (e.g. a library kernel): eager ring
        graph = None
    torch.cuda.synchronize()
    est_us = rk.max_of(graph_replay_us(ring, 1, graph=graph) if graph else _eager_us(ring))
    replays = max(1, int(TARGET_RUN_US // max(est_us, 1.0)))

    def run():
        try:
            case.clock.zero_()            # enqueued before the replay's start event
            t = (graph_replay_us(ring, replays, graph=graph) if graph else _eager_us(ring, replays))
            result = {"kernel_us": t / case.slots}
            mhz = case.run_clock_mhz()   # the Gluon kernels' clock during this timed replay
            if mhz is not None:
                result["run_clock_mhz"] = mhz
            if instrument and variant in INSTRUMENTED:
                case.stamps.zero_()
                case.enqueue(variant, 0, instrument=True)
                torch.cuda.synchronize()
                st, k = case.stamps.cpu().numpy(), min(case.programs, case.shape.n_tiles)
                result.update({n: v for n, v in tile_times(st, k).items() if n != "gap_us"})
                w = wave_stats(st, k)
                result["qloop_wave_spread"] = w["wave_p90_over_mean"] - w["wave_p10_over_mean"]
        except Exception as e:  # noqa: BLE001 (N > 1: every rank raises it, none waits)
            if rk.world == 1:
                raise
            result = e
        return rk.pool(result)

    heat_rings = max(1, int(steady_s * 1e6 // max(est_us, 1.0)))

    def heat():
        for _ in range(heat_rings):
            if graph is not None:
                graph.replay()
            else:
                ring()
    kw = dict(poison=lambda: case.poison(variant), check=lambda _r: case.check(variant),
              flush_l2=True, sync=rk.sync, agree=rk.agree, heat=heat if steady_s > 0 else None)
    return run, replays, graph is not None, kw


def _eager_us(fn, reps: int = 1) -> float:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / reps


def params_of(case: Case, variant: str, replays: int, graph: bool, target: str) -> dict:
    s, c = case.shape, case.cfg
    p = {"seq_len": s.seq_len, "batch": s.batch, "heads": s.heads, "heads_local": s.heads_local,
         "head_dim": s.head_dim, "block_m": s.block_m, "block_n": s.block_n, "sp": s.sp,
         "destination": target, "dtype": s.dtype,
         "producers": min(case.programs, s.n_tiles), "n_tiles": s.n_tiles,
         "tiles_per_cta": s.n_tiles / min(case.programs, s.n_tiles),
         "tile_bytes": fa_layout.tile_bytes(s.block_m, s.head_dim),
         "remote_bytes": s.remote_bytes, "out_bytes": s.out_bytes, "ring_slots": case.slots,
         "replays": replays, "graph": graph, "num_warps": c.num_warps,
         "num_stages": c.num_stages, "tma": c.tma, "variant": variant, "flatten": c.flatten,
         "ws": c.ws, "swp": c.swp, "tile_order": "default", "emu": c.emu, "early": c.early,
         "lsum": c.lsum, "qpf": c.qpf, "qreg": c.qreg,
         "split": c.split and variant in ("fa-only", "serial"), "mainloop": c.mainloop}
    if c.mainloop == "gluon":   # fa_gluon.launch_gluon_fa's kernel: the Triton options do not apply
        p.update(num_warps=9, num_stages=2, tma=True, flatten=False, ws=True, swp=False, emu=0,
                 early=False, lsum=False, qpf=0, qreg=False, split=False, gluon_overlap=2,
                 gluon_store16=True)
    if variant.startswith("cc-"):
        p["fence"] = variant[3:]
    if c.stagger_us:   # the run's stagger (fused and cc run it; the other variants do not)
        p["stagger_us"] = c.stagger_us
    if variant == "fused-paced":
        p.update(pace_chunks=c.pace, pace_spread=c.pace_spread, tile_order=c.pace_order,
                 pace_branch=c.pace_branch, pace_pf=c.pf,
                 pace_stride_kv=fa.pace_stride(s, c.pace, c.pace_spread))
    return p


def _platform(sm_clock_mhz: float, target: str, world: int = 1, index: int = 0) -> dict:
    from .platform_info import platform

    return platform(world, sm_clock_mhz, index, (index + 1) % max(world, 2), destination=target)


def fit_qloop(points: list[tuple[int, float]], block_n: int) -> tuple[float, float] | None:
    """Least-squares G_Qloop = fixed + sigma * M / b_n over (M, median Q-loop us) points."""
    if len(points) < 2:
        return None
    x = np.array([m / block_n for m, _ in points])
    y = np.array([q for _, q in points])
    sigma, fixed = np.polyfit(x, y, 1)
    return float(sigma), float(fixed)


def main(argv=None) -> int:
    import torch

    args = parse_args(argv)
    if args.table_from:
        rows, tiles = rows_from_records(args.table_from)
        print(table(rows))
        print(tile_table(tiles))
        return 0
    if args.config:
        import json

        with open(args.config) as f:
            args.block_m, args.block_n, args.num_warps, args.num_stages, args.tma = json.load(f)["best"]
    world = int(os.environ.get("WORLD_SIZE", "1"))
    problem = fa_dist.world_problem(args.target, world)
    if problem:
        print(f"fa_bench: {problem}", file=sys.stderr)
        return 2
    if world > 1:
        args.sp = world                           # Ulysses SP = N
    try:
        cases = shapes(args)
        cfg = kernel_config(args)
        gluon = args.mainloop == "gluon"
        known = GLUON_VARIANTS if gluon else VARIANTS
        variants = [v for v in args.variants.split(",") if v] or list(known)
        unknown = [v for v in variants if v not in known]
        if unknown:
            raise ValueError(f"variants {unknown} are not in the {args.mainloop} mainloop's {known}")
        if args.steady_s < 0 or (args.steady_s > 0 and args.paired):
            raise ValueError("--steady-s must be >= 0 and does not go with --paired")
        if args.stagger_us == "design" and not gluon:
            raise ValueError("--stagger-us design needs --mainloop gluon (the stagger is its STAGGER_NS)")
        if args.stagger_us == "design":
            design_platform(args.target, args.profile)
        if gluon and (args.head_dim, args.block_m, args.block_n) != (128, 128, 128):
            raise ValueError("--mainloop gluon needs --head-dim 128 --block-m 128 --block-n 128")
    except ValueError as exc:
        print(f"fa_bench: {exc}", file=sys.stderr)
        return 2
    if world > 1:
        rk, dest = fa_dist.join(cases, slots_for)
        cases, dev = shapes(args, rk.rank), rk.device

        def make_case(shape):
            return fa_dist.PeerCase(shape, cfg, dest, slots_for(shape), programs, rk)
    else:
        rk, dev = SOLO, torch.device("cuda", 0)
        host = _host_view(host_bytes_for(cases), dev)

        def make_case(shape):
            return Case(shape, cfg, host.cuda, slots_for(shape), programs)
    say = print if rk.rank == 0 else (lambda *a, **k: None)
    programs = args.programs or torch.cuda.get_device_properties(dev).multi_processor_count
    rule = {}
    if args.stagger_us == "design":   # eq. 10 on the aligned wave of this GPU's K programs
        cfg, rule = design_config(cfg, args.target, args.profile, programs, args.block_m, args.head_dim, args.sp)
        say(f"stagger by design ({rule['stagger_rule']}): {cfg.stagger_us:.1f} us")
    instrument = os.environ.get("TRITON_INTERPRET", "0") != "1"   # stamps are inline PTX
    commit, dirty = records.run_commit()
    rows, qloops, all_ok = [], [], True
    for shape in cases:
        case = make_case(shape)
        row = {"M": shape.seq_len, "t": {}}
        stamp_mhz = 0.0
        paired = (fa_paired.measure_shape(case, variants, args.repeats, instrument)
                  if args.paired else {})
        for variant in variants:
            try:
                if args.paired and isinstance(paired[variant], Exception):
                    raise paired[variant]
                m, replays, graph, extra = (paired[variant] if args.paired else
                                            (*measure_variant(case, variant, args.repeats,
                                                              instrument, args.steady_s), {}))
            except Exception as exc:  # noqa: BLE001 - say which variant failed, go on
                print(f"[rank {rk.rank}] M={shape.seq_len} {variant}: FAILED {type(exc).__name__}: "
                      f"{str(exc)[:300]}", flush=True)
                all_ok = False
                continue
            st = m.stats_dicts()
            if m.ok and "clock_mhz" in m.samples:
                stamp_mhz = float(np.median(m.samples["clock_mhz"]))
            mhz = stamp_mhz or smi_sm_clock_mhz()
            if st is not None:
                st.pop("clock_mhz", None)
            params = params_of(case, variant, replays, graph, args.target)
            params["smi_sm_clock_mhz"] = smi_sm_clock_mhz()
            if "stagger_us" in params:
                params.update(rule)
            if args.steady_s > 0:
                params.update(timing="steady", steady_s=args.steady_s)
            params.update(extra)
            rec = records.make_record("fa-a2a", record_kind(variant), params, st, m.check_dict(),
                                      _platform(mhz, args.target, world, dev.index or 0),
                                      commit, dirty)
            if rk.rank == 0:
                records.append_record(args.out, rec)
            all_ok &= m.ok
            if m.ok:
                row["t"][variant] = st["kernel_us"]["median"]
                if variant == "fa-only" and "qloop_us" in st:
                    qloops.append((shape.seq_len, st["qloop_us"]["median"]))
            run_mhz = (st or {}).get("run_clock_mhz", {}).get("median", float("nan"))
            say(f"M={shape.seq_len} {variant}: ok={m.ok} err={m.max_abs_err:.3g} "
                  f"t={row['t'].get(variant, float('nan')):.1f} us clock={mhz:.0f} MHz "
                  f"(timed runs {run_mhz:.0f})", flush=True)
        rows.append(row)
        del case, paired
        torch.cuda.empty_cache()
    rows.sort(key=lambda r: r["M"])
    fit = fit_qloop(qloops, args.block_n)
    if fit:
        say(f"Q-loop fit: sigma = {fit[0]:.3f} us per KV tile, fixed = {fit[1]:.2f} us")
    say(table(rows))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
