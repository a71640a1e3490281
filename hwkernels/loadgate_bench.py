"""Runner: the load-gate microbenchmark on one GPU, one record per point (experiment ``loadgate``).

    python -m hwkernels.loadgate_bench --out RECORDS.jsonl [--suite full|quick|late|trickle|fencelate|fencelate-heldout|fencestream] [--traces FILE.npz]
                                       [--log FILE]

Each point goes through the shared harness: poison the host (or local) slot this launch writes and
the per-CTA result words, flush the L2 (the load buffer is then in HBM only), launch, check every
stored word against the pattern and every loading CTA's sum against the reference, and the SM
layout the variant needs; run 0 is an untimed (checked) warm-up. Every launch writes a fresh
destination slot. A failed check is recorded with check.ok = false and no statistics.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from . import harness, records
from . import loadgate as lg
from . import loadgate_plan as plan
from .pattern import POISON, torch_check, torch_poison

STAT_ORDER = ("load_us", "load_max_us", "first_load_us", "wait_us", "after_issue_us", "issue_us",
              "bystander_load_us", "bystander_first_load_us", "flag_delay_us", "late_start_at_us",
              "late_issued_at_us", "late_issue_us", "load_start_at_us", "load_end_at_us", "kernel_us")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="hwkernels.loadgate_bench", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="records file (JSONL), appended to")
    ap.add_argument("--suite", choices=sorted(plan.SUITES), default="full")
    ap.add_argument("--traces", default=None, help="per-CTA samples of every launch (.npz)")
    ap.add_argument("--log", default=None, help="one line per point here (default: stdout)")
    return ap.parse_args(argv)


class Context:
    def __init__(self, points):
        import torch

        from .burst_store import BurstStore
        from .destination import host_buffer
        from .platform_info import platform

        self.torch = torch
        self.dev = torch.device("cuda", 0)
        self.kernel = lg.LoadGateKernel(0)
        launches = max(p.repeats for p in points) + 1
        self.slot_bytes = max(p.volume_bytes for p in points) or 16
        dst_bytes = launches * self.slot_bytes
        self.host = host_buffer(dst_bytes, self.dev)
        self.local = torch.empty(dst_bytes, dtype=torch.uint8, device=self.dev)
        grid = max(p.ctas for p in points)
        src_bytes = grid * max(p.load_bytes for p in points)
        gen = torch.Generator(device=self.dev).manual_seed(20261201)
        self.src = torch.randint(-2**31, 2**31 - 1, (src_bytes // 4,), dtype=torch.int32, device=self.dev,
                                 generator=gen).view(torch.uint8)
        self.result = torch.empty(grid, dtype=torch.int32, device=self.dev)
        self._sums = {}
        self.clock_ghz = BurstStore(0).clock_ghz(self.local.data_ptr())
        self.platform = platform(1, self.clock_ghz * 1e3, 0, destination="host")
        self.commit, self.dirty = records.run_commit()

    def reference(self, ctas: int, load_bytes: int) -> np.ndarray:
        key = (ctas, load_bytes)
        if key not in self._sums:
            self._sums[key] = lg.region_sums(self.src, ctas, load_bytes)
        return self._sums[key]


def measure_point(ctx: Context, pt: plan.Point):
    torch = ctx.torch
    host = pt.destination == "host"
    gap_cycles = int(round(pt.gap_us * 1e3 * ctx.clock_ghz))
    late = {"late_bytes": pt.late_bytes, "late_bursts": pt.late_bursts,
            "late_delay_cycles": int(round(pt.late_delay_us * 1e3 * ctx.clock_ghz)),
            "late_spin_cycles": int(round(pt.late_spin_us * 1e3 * ctx.clock_ghz))}
    a_bytes = pt.store_ctas * pt.burst_bytes
    reference = ctx.reference(pt.ctas, pt.load_bytes)
    poison_word = POISON
    state = {"launch": 0}
    last = {}

    def slot_views():
        off = state["launch"] * ctx.slot_bytes
        n = pt.volume_bytes
        if host:
            return ctx.host.cpu[off:off + n], ctx.host.cuda[off:off + n], ctx.host.ptr + off
        view = ctx.local[off:off + n]
        return view, view, view.data_ptr()

    def poison():
        if pt.volume_bytes:
            torch_poison(slot_views()[0], pt.volume_bytes)
        ctx.result.fill_(POISON - (1 << 32))

    def run():
        _, _, ptr = slot_views()
        r = ctx.kernel.run(ptr, pt.burst_bytes, ctx.src, pt.load_bytes, ctx.result, pt.ctas,
                           0 if pt.mode == "cosm" else pt.store_ctas, pt.mode, gap_cycles, pt.fence,
                           pt.load == "tma", pt.threads, **late)
        t = lg.times(r.stamps, r.info)
        last.clear()
        last.update(run=r, times=t)
        out = dict(lg.samples(t, pt.burst_bytes), kernel_us=r.kernel_us)
        out["_raw"] = {"load_us": t.load_us, "first_load_us": t.first_load_us, "wait_us": t.wait_us,
                       "issue_us": t.issue_us, "issued_at_us": t.issued_at_us,
                       "load_start_at_us": t.load_start_at_us, "store_start_at_us": t.store_start_at_us,
                       "load_end_at_us": t.load_end_at_us, "smid": t.smid, "role": t.role}
        return out

    def check(_result):
        r, t = last["run"], last["times"]
        ok, worst = True, 0.0
        view = slot_views()[1]
        if a_bytes:
            ok, worst = torch_check(view[:a_bytes], pt.store_ctas, pt.burst_bytes, 1)
        if pt.late_ctas and pt.late_bytes:   # set C's bursts, burst-major after A's slots
            c_ok, c_worst = torch_check(view[a_bytes:pt.volume_bytes], pt.late_ctas, pt.late_bytes, pt.late_bursts)
            ok, worst = ok and c_ok, max(worst, c_worst)
        res_ok, res_err = lg.check_result(r, reference, poison_word)
        why = lg.layout_ok(t, pt.mode, pt.ctas, ctx.kernel.sms)
        if r.err:
            print(f"{pt.key}: kernel error flags: {lg.describe_err(r.err)}", file=sys.stderr)
        if why:
            print(f"{pt.key}: {why}", file=sys.stderr)
        if not ok or not res_ok:
            print(f"{pt.key}: data check failed (stores ok={ok}, sums ok={res_ok})", file=sys.stderr)
        state["launch"] += 1
        return ok and res_ok and not r.err and why is None, max(worst, res_err)

    return harness.measure(run, repeats=pt.repeats, warmup=1, poison=poison, check=check, flush_l2=True)


def point_line(pt: plan.Point, rec: dict) -> str:
    head = f"{pt.key:34s}"
    if not rec["check"]["ok"]:
        return head + "  CHECK FAILED"
    s = rec["stats"]

    def m(name, key="median"):
        return f"{s[name][key]:8.2f}" if name in s else "       -"
    return (head + f" load med {m('load_us')} p90 {m('load_us', 'p90')} max {m('load_us', 'max')}"
            f" first {m('first_load_us')} wait {m('wait_us')} issue {m('issue_us')}"
            f" byst {m('bystander_load_us')} flag {m('flag_delay_us')} kern {m('kernel_us')}")


def summary_table(recs: list[tuple[plan.Point, dict]]) -> str:
    """Median load-phase time (us) at L = 256 KiB: rows (variant, K), columns B; then the gap rows."""
    cols = plan.SWEEP_BYTES
    lines = ["# load-phase median us (p90) at L=256K; columns B = " + " ".join(f"{b // 1024}K" for b in cols)]
    rows = {}
    for pt, rec in recs:
        if pt.load_bytes != plan.CONTROL_LOAD_BYTES or pt.variant == "gap":
            continue
        tag = (pt.variant + ("/tma" if pt.load == "tma" else "") + (f"/S{pt.storers}" if pt.storers else ""), pt.ctas)
        s = rec["stats"].get("load_us") if rec["check"]["ok"] else None
        rows.setdefault(tag, {})[pt.burst_bytes] = "FAIL" if s is None else f"{s['median']:.1f}({s['p90']:.0f})"
    for (name, k), cells in rows.items():
        lines.append(f"{name:16s} K={k:3d} " + " ".join(f"{cells.get(b, '-'):>11s}" for b in cols))
    for pt, rec in recs:
        if pt.variant == "gap" and rec["check"]["ok"]:
            s = rec["stats"]["load_us"]
            lines.append(f"gap K={pt.ctas} B={pt.burst_bytes // 1024}K G={pt.gap_us:g}: load {s['median']:.1f} "
                         f"p90 {s['p90']:.1f} max {s['max']:.1f}")
    return "\n".join(lines)


def late_table(recs: list[tuple[plan.Point, dict]]) -> str:
    """The late/stream points (and the same-run controls): set A's load phase against when C stored."""
    lines = ["# late/stream: A = first S CTAs store B then load L; C = the rest store C after D us (N bursts, P us apart)",
             f"{'point':44s} {'A load med':>10s} {'p90':>6s} {'first':>6s} {'A start':>7s} {'A end':>6s} "
             f"{'C start':>7s} {'C issued':>8s}"]

    def med(s, name, key="median"):
        return f"{s[name][key]:.1f}" if name in s else "-"
    for pt, rec in recs:
        if not rec["check"]["ok"]:
            lines.append(f"{pt.key:44s} CHECK FAILED")
            continue
        s = rec["stats"]
        lines.append(f"{pt.key:44s} {med(s, 'load_us'):>10s} {med(s, 'load_us', 'p90'):>6s} "
                     f"{med(s, 'first_load_us'):>6s} {med(s, 'load_start_at_us'):>7s} {med(s, 'load_end_at_us'):>6s} "
                     f"{med(s, 'late_start_at_us'):>7s} {med(s, 'late_issued_at_us'):>8s}")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    points = plan.SUITES[args.suite]()
    ctx = Context(points)
    log = open(args.log, "a") if args.log else sys.stdout
    print(f"# loadgate: {len(points)} points sm_clock={ctx.clock_ghz * 1e3:.0f} MHz "
          f"platform={json.dumps(ctx.platform)}", file=log, flush=True)
    traces, done, failed, t0 = {}, [], 0, time.time()
    for i, pt in enumerate(points):
        try:
            m = measure_point(ctx, pt)
            check = m.check_dict()
        except Exception as exc:  # a launch the GPU refused: recorded as a failed point, the sweep goes on
            print(f"{pt.key}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            m = harness.Measurement(False, 0.0, None)
            check = {"ok": False, "max_abs_err": 0.0, "error": f"{type(exc).__name__}: {exc}"[:300]}
        rec = records.make_record("loadgate", pt.variant, pt.params(), m.stats_dicts(), check,
                                  ctx.platform, ctx.commit, ctx.dirty)
        rec["params"].update(repeats=pt.repeats, warmup_runs=1, threads=pt.threads)
        records.append_record(args.out, rec)
        failed += not m.ok
        done.append((pt, rec))
        print(point_line(pt, rec), file=log, flush=True)
        if m.ok and args.traces:
            for name in m.raw[0]["_raw"]:
                traces[f"{pt.key}__{name}"] = np.stack([r["_raw"][name] for r in m.raw]).astype(
                    np.int16 if name in ("smid", "role") else np.float32)
        if args.traces and (i % 25 == 24 or i == len(points) - 1):
            np.savez_compressed(args.traces, **traces)
    print(f"# done: {len(points)} points, {failed} failed checks, {time.time() - t0:.1f} s", file=log, flush=True)
    if log is not sys.stdout:
        log.close()
    print(late_table(done) if args.suite in ("late", "trickle", "fencelate", "fencelate-heldout", "fencestream") else summary_table(done))
    print(f"# done: {len(points)} points, {failed} failed checks, {time.time() - t0:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
