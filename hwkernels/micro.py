"""Runner: the remote-store microbenchmark suite under torchrun, one record per point.

    torchrun --nproc-per-node N -m hwkernels.micro --out RECORDS.jsonl [--target peer|host]
             [--suite full|quick] [--traces DIR] [--pattern pair|ring] [--mechanisms M,...]

target peer (N >= 2): pattern pair: rank 0 stores into rank 1 (unidirectional, as in the
paper); ring: every rank r stores into rank (r+1) % N at the same time. target host (any
N >= 1): each source rank stores into its own mapped pinned host buffer over PCIe (pair: rank 0
only; ring: every rank at once). Rank 0 always measures and is the only writer of records.
Each point goes through the shared harness (hwkernels.harness): the receiver poisons its
region, the L2 is flushed, the kernel runs, the receiver checks every word, and only then is
the run kept; run 0 of each point is an untimed warm-up (still checked). A failed check is
recorded with check.ok = false and no statistics.
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

from . import destination, harness, records, timing  # noqa: E402
from . import plan as planmod  # noqa: E402

ISSUE_SPAN_END = {
    "st.v4": "thread 0 after the __syncthreads that follows every thread's last store (no fence): the "
             "stores were issued/accepted; backpressure on the link can land on a thread's next memory "
             "operation, i.e. in the next burst's span",
    "tma": "cp.async.bulk.wait_group.read 0 in every issuing lane, then __syncthreads: the staging "
           "buffer has been read",
}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="hwkernels.micro", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="records file (JSONL), appended to")
    ap.add_argument("--target", choices=destination.KINDS, default="peer",
                    help="where remote stores land: another GPU (peer) or pinned host memory (host)")
    ap.add_argument("--suite", choices=sorted(planmod.SUITES), default="full")
    ap.add_argument("--traces", default=None, help="folder for per-burst trace .npz files")
    ap.add_argument("--pattern", choices=("pair", "ring"), default="pair")
    ap.add_argument("--groups", default="", help="comma-separated plan groups to run (all)")
    ap.add_argument("--mechanisms", default="", help="comma-separated store mechanisms to run (all)")
    ap.add_argument("--crosscheck", default=None,
                    help="also cross-check CUDA vs Triton drain rate; records to this file")
    return ap.parse_args(argv)


def select(points, groups: str = "", mechanisms: str = ""):
    """The plan's points of the given groups and mechanisms (empty: all), in plan order."""
    keep_g = set(groups.split(",")) if groups else None
    keep_m = set(mechanisms.split(",")) if mechanisms else None
    return [p for p in points if (keep_g is None or p.group in keep_g)
            and (keep_m is None or p.mechanism in keep_m)]


class Context:
    """Everything a point needs: the job, the destination, buffers, kernels, roles, platform."""

    def __init__(self, args, points):
        import torch

        from . import symm
        from .baselines import pattern_source
        from .burst_store import BurstStore
        from .platform_info import platform

        self.d = symm.init()
        try:
            destination.check_kind(args.target, self.d.world)
        except destination.DestinationError as exc:
            raise SystemExit(f"hwkernels.micro: {exc}") from None
        rank, world = self.d.rank, self.d.world
        self.l2_bytes = torch.cuda.get_device_properties(self.d.device).L2_cache_size
        nbytes = max(p.dst_bytes for p in points)
        if args.crosscheck:
            from .crosscheck import max_dst_bytes

            nbytes = max(nbytes, max_dst_bytes())
        self.dest = destination.make(args.target, nbytes, self.d)
        self.pattern = args.pattern
        step = 0 if args.target == "host" else 1    # host: each rank receives its own stores
        if args.pattern == "pair":
            self.sources = {0: step % world}
        else:
            self.sources = {r: (r + step) % world for r in range(world)}
        self.local = torch.empty(nbytes, dtype=torch.uint8, device=self.d.device)
        self.bs = BurstStore(self.d.device.index)
        self.clock_ghz = self.bs.clock_ghz(self.local.data_ptr())
        self.timer_steps_ns = self.bs.timer_resolution_ns()
        copies = [p.burst_bytes for p in points if p.kind in ("ce-copy", "nccl")]
        self.src_buf = pattern_source(max(copies, default=16), self.d.device)
        self.platform = platform(world, self.clock_ghz * 1e3, self.d.device.index,
                                 (self.d.device.index + 1) % max(world, 2), destination=args.target)
        self.commit, self.dirty = records.run_commit()
        self.rank = rank
        self.trace_dir = args.traces

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
         "destination": ctx.dest.kind, "src_rank": 0, "dst_rank": ctx.sources[0],
         "world_size": ctx.d.world}
    if pt.kind not in ("ce-copy", "nccl"):
        p["ring_bursts"] = pt.ring(ctx.l2_bytes)
        p["issue_span_end"] = ISSUE_SPAN_END["tma" if pt.mechanism == "tma" else "st.v4"]
    if ctx.pattern != "pair":
        p["pattern"] = ctx.pattern
    return p


def run_kernel_point(ctx: Context, pt: planmod.Point) -> harness.Measurement:
    """The point through the shared harness; samples (and raw runs) are rank 0's."""
    from . import burst_store
    from .symm import all_ok, barrier

    local = pt.target == "local"
    ring = pt.ring(ctx.l2_bytes)
    shape = (pt.producers, pt.burst_bytes, pt.bursts, ring)
    recv = ctx.local if local else ctx.dest.receive_view()
    receiving = ctx.is_src if (local or ctx.dest.is_receiver_local) else ctx.is_dst
    gap_cycles = int(round(pt.gap_us * 1e3 * ctx.clock_ghz))
    last = {}

    def poison():
        if receiving:
            burst_store.poison(recv, *shape)

    def run():
        last.clear()
        if not ctx.is_src:
            return None
        ptr = ctx.local.data_ptr() if local else ctx.dest.remote_ptr(ctx.dst_rank)
        r = ctx.bs.run(ptr, pt.producers, pt.burst_bytes, pt.bursts, gap_cycles, pt.aligned,
                       pt.mechanism, pt.threads, ring)
        t = timing.burst_times(r.stamps, r.info)
        last.update(run=r, times=t)
        if ctx.rank != 0:
            return None
        w = pt.warmup_bursts
        return {"issue_us": timing.issue_samples(t, w), "burst_issue_us": timing.burst_issue_samples(t, w),
                "issue_max_us": timing.issue_max_samples(t, w),
                "period_us": timing.period_samples(t, w), "kernel_us": r.kernel_us, "_run": r, "_times": t}

    def check(_result):
        ok, err = burst_store.check(recv, *shape) if receiving else (True, 0.0)
        if last and last["run"].barrier_timeout:
            print(f"[rank {ctx.rank}] grid barrier timed out: {pt.key}", file=sys.stderr)
            ok = False
        if last and not timing.distinct_sms(last["times"]):
            print(f"[rank {ctx.rank}] producers shared an SM: {pt.key}", file=sys.stderr)
            ok = False
        return ok, err

    return harness.measure(run, repeats=pt.repeats, warmup=1, poison=poison, check=check,
                           flush_l2=True, sync=barrier, agree=all_ok)


def save_trace(folder: str, pt: planmod.Point, times, runs) -> None:
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    meta = {"key": pt.key, "producers": pt.producers, "burst_bytes": pt.burst_bytes,
            "gap_us": pt.gap_us, "aligned": pt.aligned, "mechanism": pt.mechanism,
            "threads": pt.threads, "target": pt.target, "destination": pt.destination, "kind": pt.kind,
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


def run_baseline_point(ctx: Context, pt: planmod.Point) -> harness.Measurement:
    """The transfer's Measurement, its samples broadcast to every rank (they live on one)."""
    import torch.distributed as dist

    from .baselines import ce_copy, nccl_send_recv

    fn = ce_copy if pt.kind == "ce-copy" else nccl_send_recv
    m = fn(ctx, 0, ctx.sources[0], pt.burst_bytes, pt.warmup_bursts, pt.repeats, ctx.src_buf)
    holder = ctx.sources[0] if pt.kind == "nccl" else 0
    box = [m.samples.get("kernel_us") if m.ok else None]
    dist.broadcast_object_list(box, src=holder)
    if m.ok:
        m = harness.Measurement(True, m.max_abs_err, {"kernel_us": harness.summarize(box[0])},
                                {"kernel_us": box[0]})
    return m


def run_point(ctx: Context, pt: planmod.Point) -> dict:
    if pt.kind in ("ce-copy", "nccl"):
        m = run_baseline_point(ctx, pt)
        gbps = pt.burst_bytes / (m.stats["kernel_us"].median * 1e3) if m.ok else None
        return records.make_record("micro", pt.kind, params_of(ctx, pt), m.stats_dicts(), m.check_dict(),
                                   ctx.platform, ctx.commit, ctx.dirty, gbps=gbps)
    m = run_kernel_point(ctx, pt)
    stats = m.stats_dicts() if ctx.rank == 0 else None
    if m.ok and ctx.rank == 0 and pt.trace and ctx.trace_dir:
        save_trace(ctx.trace_dir, pt, [r["_times"] for r in m.raw], [r["_run"] for r in m.raw])
    return records.make_record("micro", pt.kind, params_of(ctx, pt), stats, m.check_dict(),
                               ctx.platform, ctx.commit, ctx.dirty)


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
                   f" p90={s['issue_us']['p90']:7.3f} max/burst={s['issue_max_us']['median']:7.3f}"
                   f"  per med={s['period_us']['median']:7.3f}"
                   f"  burst={s['burst_issue_us']['median']:7.3f}"
                   f"  kern={s['kernel_us']['median']:8.1f}")


FLAG_ABOVE_CE = "drain_above_copy_engine"


def drain_gbps(rec: dict) -> float | None:
    """The aggregate rate a periodic remote record shows: all bytes over the median kernel time, or
    (aligned) one burst's volume over the median period, whichever is larger; None if not periodic."""
    p, s = rec["params"], rec["stats"]
    if rec["kind"] != "periodic" or p["target"] != "remote" or "period_us" not in s:
        return None
    volume = p["producers"] * p["burst_bytes"]
    rates = [p["bursts"] * volume / (s["kernel_us"]["median"] * 1e3)]
    if p["aligned"]:
        rates.append(volume / (s["period_us"]["median"] * 1e3))
    return max(rates)


def flag_fake_drain(rec: dict, ce_gbps: float | None) -> None:
    """Flag a point whose drain beats the copy engine on the same link (L2 merging, not the link)."""
    rate = drain_gbps(rec) if rec["check"]["ok"] else None
    if ce_gbps and rate is not None and rate > ce_gbps:
        rec.setdefault("flags", []).append(FLAG_ABOVE_CE)
        rec["drain_gbps"] = rate


def period_key(pt: planmod.Point):
    """Gap sweeps of both alignments scale with the aligned zero-gap period P0(K, B, mech):
    aligned P0 is the drain-limited V/R, while a free-running producer's own period is
    not (arbitration between SMs is unfair, so per-producer rates differ)."""
    return (pt.producers, pt.burst_bytes, pt.mechanism)


def main(argv=None) -> int:
    args = parse_args(argv)
    points = select(planmod.SUITES[args.suite](args.target), args.groups, args.mechanisms)
    if not points:
        raise SystemExit("hwkernels.micro: no points selected (check --groups and --mechanisms)")
    ctx = Context(args, points)
    if ctx.rank == 0:
        steps = ctx.timer_steps_ns
        print(f"# world={ctx.d.world} target={ctx.dest.kind} link={ctx.dest.link} "
              f"pattern={ctx.pattern} points={len(points)} "
              f"sm_clock={ctx.clock_ghz * 1e3:.0f} MHz globaltimer step median="
              f"{np.median(steps):.0f} ns min={steps.min()} max={steps.max()} "
              f"platform={json.dumps(ctx.platform)}", flush=True)
    period0 = {}
    ce_gbps = None
    t0 = time.time()
    failed = 0
    for pt in points:
        if pt.gap_frac is not None:
            ref = period0.get(period_key(pt))
            if ref is None:
                ref = pt.volume_bytes / planmod.RECOVERY_RATE_BYTES_PER_US[pt.destination]
            pt = pt.resolve_gap(ref)
        rec = run_point(ctx, pt)
        failed += not rec["check"]["ok"]
        if rec["kind"] == "ce-copy" and "gbps" in rec:
            ce_gbps = max(ce_gbps or 0.0, rec["gbps"])
        if ctx.rank == 0:
            flag_fake_drain(rec, ce_gbps)
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
