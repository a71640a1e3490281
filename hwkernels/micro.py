"""Runner: the remote-store microbenchmark suite under torchrun, one record per point.

    torchrun --nproc-per-node N -m hwkernels.micro --out RECORDS.jsonl [--suite full|quick]
             [--traces DIR] [--pattern pair|ring]

pattern pair: rank 0 stores into rank 1 (unidirectional, as in the paper); ring: every
rank r stores into rank (r+1) % N at the same time. Rank 0 always measures and is the only
writer of records. Each point: the destination is poisoned, the kernel runs, the destination
rank checks every word, and only then is the run kept; run 0 of each point is an untimed
warm-up (still checked). A failed check is recorded with check.ok = false and no statistics.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

from .symm import force_safe_env

force_safe_env()
os.environ.setdefault("TORCH_NCCL_SHOW_EAGER_INIT_P2P_SERIALIZATION_WARNING", "false")

import numpy as np  # noqa: E402

from . import plan as planmod  # noqa: E402
from . import records, timing  # noqa: E402
from .stats import summarize  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="hwkernels.micro", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="records file (JSONL), appended to")
    ap.add_argument("--suite", choices=sorted(planmod.SUITES), default="full")
    ap.add_argument("--traces", default=None, help="folder for per-burst trace .npz files")
    ap.add_argument("--pattern", choices=("pair", "ring"), default="pair")
    ap.add_argument("--groups", default="", help="comma-separated plan groups to run (all)")
    ap.add_argument("--crosscheck", default=None,
                    help="also cross-check CUDA vs Triton drain rate; records to this file")
    return ap.parse_args(argv)


class Context:
    """Everything a point needs: the job, buffers, kernels, roles, platform."""

    def __init__(self, args, points):
        import torch

        from . import symm
        from .baselines import pattern_source
        from .burst_store import BurstStore

        nbytes = max(p.dst_bytes for p in points)
        if args.crosscheck:
            from .crosscheck import max_dst_bytes

            nbytes = max(nbytes, max_dst_bytes())
        self.d = symm.init(nbytes)
        if self.d.world < 2:
            raise SystemExit("hwkernels.micro needs at least 2 GPUs (torchrun --nproc-per-node N>=2)")
        self.pattern = args.pattern
        rank, world = self.d.rank, self.d.world
        if args.pattern == "pair":
            self.sources = {0: 1}
        else:
            self.sources = {r: (r + 1) % world for r in range(world)}
        self.local = torch.empty(nbytes, dtype=torch.uint8, device=self.d.device)
        self.bs = BurstStore(self.d.device.index)
        self.clock_ghz = self.bs.clock_ghz(self.local.data_ptr())
        self.timer_steps_ns = self.bs.timer_resolution_ns()
        copies = [p.burst_bytes for p in points if p.kind in ("ce-copy", "nccl")]
        self.src_buf = pattern_source(max(copies, default=16), self.d.device)
        from .platform_info import platform

        self.platform = platform(world, self.clock_ghz * 1e3, self.d.device.index,
                                 (self.d.device.index + 1) % max(world, 2))
        self.commit = os.environ.get("XSTAGE_COMMIT", "unknown")
        dirty = os.environ.get("XSTAGE_DIRTY")
        self.dirty = None if dirty is None else dirty not in ("0", "false", "False", "")
        self.rank = rank

    @property
    def is_src(self) -> bool:
        return self.rank in self.sources

    @property
    def dst_rank(self) -> int:
        return self.sources.get(self.rank, -1)

    @property
    def is_dst(self) -> bool:
        return self.rank in self.sources.values()


def params_of(ctx: Context, pt: planmod.Point) -> dict:
    p = {"producers": pt.producers, "burst_bytes": pt.burst_bytes, "gap_us": pt.gap_us,
         "bursts": pt.bursts, "warmup_bursts": pt.warmup_bursts, "aligned": pt.aligned,
         "mechanism": pt.mechanism, "threads": pt.threads, "target": pt.target,
         "src_rank": 0, "dst_rank": ctx.sources[0], "world_size": ctx.d.world}
    if ctx.pattern != "pair":
        p["pattern"] = ctx.pattern
    return p


def run_kernel_point(ctx: Context, pt: planmod.Point):
    """Returns (ok, max_abs_err, [Run] of rank 0's timed launches)."""
    from . import burst_store
    from .symm import all_ok, barrier

    local = pt.target == "local"
    gap_cycles = int(round(pt.gap_us * 1e3 * ctx.clock_ghz))
    runs = []
    ok, err = True, 0.0
    for r in range(pt.repeats + 1):
        if local and ctx.is_src:
            burst_store.poison(ctx.local, pt.producers, pt.burst_bytes, pt.bursts)
        if not local and ctx.is_dst:
            burst_store.poison(ctx.d.symm, pt.producers, pt.burst_bytes, pt.bursts)
        barrier()
        run = None
        if ctx.is_src:
            ptr = ctx.local.data_ptr() if local else ctx.d.peer_ptr(ctx.dst_rank)
            run = ctx.bs.run(ptr, pt.producers, pt.burst_bytes, pt.bursts, gap_cycles,
                             pt.aligned, pt.mechanism, pt.threads)
        barrier()
        mine_ok, mine_err = True, 0.0
        if local and ctx.is_src:
            mine_ok, mine_err = burst_store.check(ctx.local, pt.producers, pt.burst_bytes, pt.bursts)
        if not local and ctx.is_dst:
            mine_ok, mine_err = burst_store.check(ctx.d.symm, pt.producers, pt.burst_bytes,
                                                  pt.bursts)
        if run is not None and run.barrier_timeout:
            print(f"[rank {ctx.rank}] grid barrier timed out: {pt.key}", file=sys.stderr)
            mine_ok = False
        if run is not None and not timing.distinct_sms(timing.burst_times(run.stamps, run.info)):
            print(f"[rank {ctx.rank}] producers shared an SM: {pt.key}", file=sys.stderr)
            mine_ok = False
        ok, e = all_ok(mine_ok, mine_err)
        err = max(err, e)
        if not ok:
            return False, err, []
        if r > 0 and ctx.rank == 0:
            runs.append(run)
    return ok, err, runs


def kernel_stats(runs, pt: planmod.Point) -> tuple[dict, list]:
    times = [timing.burst_times(r.stamps, r.info) for r in runs]
    w = pt.warmup_bursts
    stats = {
        "issue_us": summarize(np.concatenate([timing.issue_samples(t, w) for t in times])),
        "burst_issue_us": summarize(np.concatenate([timing.burst_issue_samples(t, w)
                                                    for t in times])),
        "period_us": summarize(np.concatenate([timing.period_samples(t, w) for t in times])),
        "kernel_us": summarize([r.kernel_us for r in runs]),
    }
    return {k: v.to_dict() for k, v in stats.items()}, times


def save_trace(folder: str, pt: planmod.Point, times, runs) -> None:
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    meta = {"key": pt.key, "producers": pt.producers, "burst_bytes": pt.burst_bytes,
            "gap_us": pt.gap_us, "aligned": pt.aligned, "mechanism": pt.mechanism,
            "threads": pt.threads, "target": pt.target, "kind": pt.kind,
            "warmup_bursts": pt.warmup_bursts, "units": "us; start/end on a shared timeline "
            "per run (0 = earliest issue start)"}
    np.savez_compressed(
        path / f"{pt.key}.npz",
        start_us=np.stack([t.start_us for t in times]).astype(np.float32),
        end_us=np.stack([t.end_us for t in times]).astype(np.float32),
        clock_ghz=np.stack([t.clock_ghz for t in times]).astype(np.float32),
        smid=times[0].smid.astype(np.int16),
        kernel_us=np.array([r.kernel_us for r in runs], dtype=np.float32),
        meta=np.array(json.dumps(meta)))


def run_baseline_point(ctx: Context, pt: planmod.Point):
    """Returns (ok, max_abs_err, per-transfer microseconds known on rank 0)."""
    import torch.distributed as dist

    from .baselines import ce_copy, nccl_send_recv

    fn = ce_copy if pt.kind == "ce-copy" else nccl_send_recv
    ok, err, samples = fn(ctx.d, 0, ctx.sources[0], pt.burst_bytes, pt.warmup_bursts,
                          pt.repeats, ctx.src_buf)
    box = [samples]
    dist.broadcast_object_list(box, src=ctx.sources[0] if pt.kind == "nccl" else 0)
    return ok, err, box[0]


def run_point(ctx: Context, pt: planmod.Point) -> dict:
    if pt.kind in ("ce-copy", "nccl"):
        ok, err, samples = run_baseline_point(ctx, pt)
        stats, gbps = None, None
        if ok:
            stats = {"kernel_us": summarize(samples).to_dict()}
            gbps = pt.burst_bytes / (stats["kernel_us"]["median"] * 1e3)
        return records.make_record("micro", pt.kind, params_of(ctx, pt), stats,
                                   {"ok": ok, "max_abs_err": err}, ctx.platform, ctx.commit,
                                   ctx.dirty, gbps=gbps)
    ok, err, runs = run_kernel_point(ctx, pt)
    stats = None
    if ok and ctx.rank == 0:
        stats, times = kernel_stats(runs, pt)
        if pt.trace and ctx.trace_dir:
            save_trace(ctx.trace_dir, pt, times, runs)
    return records.make_record("micro", pt.kind, params_of(ctx, pt), stats,
                               {"ok": ok, "max_abs_err": err}, ctx.platform, ctx.commit,
                               ctx.dirty)


def summary_line(rec: dict) -> str:
    p, s = rec["params"], rec["stats"]
    head = (f"{rec['kind']:9s} {p['mechanism']:11s} K={p['producers']:4d} "
            f"B={p['burst_bytes'] // 1024:7d}K G={p['gap_us']:7.3f} "
            f"{'al' if p['aligned'] else 'fr'} t={p['threads']:4d} {p['target']:6s}")
    if not rec["check"]["ok"]:
        return head + f"  CHECK FAILED (max_abs_err={rec['check']['max_abs_err']:g})"
    if "gbps" in rec:
        return head + f"  t={s['kernel_us']['median']:9.2f}us  {rec['gbps']:7.1f} GB/s"
    return head + (f"  iss med={s['issue_us']['median']:7.3f} mean={s['issue_us']['mean']:7.3f}"
                   f" p90={s['issue_us']['p90']:7.3f}  per med={s['period_us']['median']:7.3f}"
                   f"  burst={s['burst_issue_us']['median']:7.3f}"
                   f"  kern={s['kernel_us']['median']:8.1f}")


def period_key(pt: planmod.Point):
    """Gap sweeps of both alignments scale with the aligned zero-gap period P0(K, B, mech):
    aligned P0 is the drain-limited V/R, while a free-running producer's own period is
    not (arbitration between SMs is unfair, so per-producer rates differ)."""
    return (pt.producers, pt.burst_bytes, pt.mechanism)


def main(argv=None) -> int:
    args = parse_args(argv)
    points = planmod.SUITES[args.suite]()
    if args.groups:
        keep = set(args.groups.split(","))
        points = [p for p in points if p.group in keep]
    ctx = Context(args, points)
    ctx.trace_dir = args.traces
    if ctx.rank == 0:
        steps = ctx.timer_steps_ns
        print(f"# world={ctx.d.world} pattern={ctx.pattern} points={len(points)} "
              f"sm_clock={ctx.clock_ghz * 1e3:.0f} MHz globaltimer step median="
              f"{np.median(steps):.0f} ns min={steps.min()} max={steps.max()} "
              f"platform={json.dumps(ctx.platform)}", flush=True)
    period0 = {}
    t0 = time.time()
    failed = 0
    for pt in points:
        if pt.gap_frac is not None:
            ref = period0.get(period_key(pt))
            if ref is None:
                ref = pt.volume_bytes / planmod.RECOVERY_RATE_BYTES_PER_US
            pt = pt.resolve_gap(ref)
        rec = run_point(ctx, pt)
        failed += not rec["check"]["ok"]
        if (rec["check"]["ok"] and pt.kind == "periodic" and pt.gap_us == 0 and pt.aligned
                and pt.target == "remote" and ctx.rank == 0):
            period0[period_key(pt)] = rec["stats"]["period_us"]["median"]
        if ctx.rank == 0:
            records.append_record(args.out, rec)
            print(summary_line(rec), flush=True)
        _share_period0(period0)
    if args.crosscheck:
        from . import crosscheck

        crosscheck.run(ctx, args.crosscheck, params_of)
    if ctx.rank == 0:
        print(f"# done: {len(points)} points, {failed} failed checks, "
              f"{time.time() - t0:.1f} s", flush=True)
    import torch.distributed as dist

    dist.destroy_process_group()
    return 1 if failed else 0


def _share_period0(period0: dict) -> None:
    """Keep every rank's view of the measured zero-gap periods equal to rank 0's."""
    import torch.distributed as dist

    box = [dict(period0) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    period0.clear()
    period0.update(box[0])


if __name__ == "__main__":
    sys.exit(main())
