"""Runner: the fused MoE kernel per config x schedule on one GPU or N ranks, one record per point.

    python -m hwkernels.moe_bench --out RECORDS.jsonl --target host [--configs A,B|x.toml]
           [--trials 20] [--phases kernel,signal,gemm,mainloop] [--tune] [--suite full|quick]
           [--combine host|local] [--combine-hint cs|evict_first] [--lead scenario|default|candidates|N,...]
           [--traces T.npz]

kernel (kind "kernel"): for each config and both schedules (order rotated per config), the
destination is poisoned (NaN), the kernel runs, the Combine output is checked against the
torch reference, and only then is the run kept (run 0 is an untimed, checked warm-up).
Stats: kernel_us (CUDA events), per-tile distributions from the stamps: span_us (each L2
tile's Combine store span T_RS), stall_us (eq. 15 at staging depth 0: T_cover = 0, so the
stall of an L2 tile is its span), wait_us (each L2 tile's l2_full wait), signal_us (each L1
tile's release), l1_mainloop_us, l2_mainloop_us. signal (kind "signal"): the same kernel
with a relaxed L1 signal (not ordered by the PTX model: a measurement of what the release
costs, never a kernel time). gemm / mainloop: see moe_gemm.py; mainloop records are the
per-tile mainloop times of the GEMM-only runs (all SMs busy, no Combine over the link).
--combine local (the local-Combine control): the same kernel and tile tables with the Combine
into a device buffer of the same [tokens, topk, hidden] layout, so no link is involved; kind
"kernel_local" per (config, schedule), and kind "mainloop" records (source "fused-local",
one per config x schedule x tile kind) of the fused kernel's own per-tile times: the
mainloop, and for L1 its fixed costs (wait before the mainloop, nothing to wait for; the
activation store; the release), for L2 the local Combine store. These carry no link
information: xsim.moe.compute_fit prefers them over the GEMM-only records.
--combine-hint: the Combine stores with an L2 hint (KernelConfig.combine_hint: evict_first, or cs for
st.global.cs; records carry params.combine_hint), to tell what the local control's Combine into device
memory costs the mainloops beside it.
--lead: the interleaved table at each listed lead (records carry it): scenario (default; the
config's own, the shipped one-GPU scenarios' pick of the what-if tool), default (ceil(2 D_knee)),
candidates (every lead the pick chose among), N rows; the wave table once per config.
--target host: one process (ep = 1). --target peer, N >= 2 ranks under torchrun: EP = N as
moe_dist.py says (Dispatch all-to-all outside the timed kernel, Combine into each token's
rank's buffer, each rank checks what it received; per-trial kernel time = max over ranks; rank
0 writes the records); kernel and signal phases only. Never run on GPUs: CPU-tested (gloo).
--traces (one GPU): a new .npz with each kernel point's last stamped run, keyed
config|schedule|{host or local|stamps, tiles, offsets, store_bytes} (hwkernels.moe_beside.add_trace;
benchmarks/moe_beside_traces.py pairs a host file with a local one), rewritten after every config.
"""

import argparse
import os
import sys
import time
from dataclasses import replace

from . import moe, moe_dist, moe_reference, records
from .moe_stamps import kernel_samples
from .moe_bench_gemm import gemm_phase, read_settings, tune, write_settings
from .moe_beside import add_trace, relative_stamps, save_traces
from .moe_bench_io import fused_mainloop_records, host_out, kernel_params, local_out, print_table
from .moe_catalog import leads_for, load_configs, parse_leads
from .platform_info import smi_sm_clock_mhz
from .ranks import SOLO
from .stats import summarize

# The kernel settings. Until 1d01d56 the --tune picks at 10d8eb7 (settings-10d8eb7.json:
# bf16 K steps 64/64, fp8 128/128, 8 warps, 4 stages; fp8 promotes its accumulator into fp32
# once per K step, acc_k = -1: without it in Linear-1 sm_90's fp8 accumulation flips 3-6 % of
# the e4m3 activations and fails the end-to-end check, docs/moe-kernel.md). Since then (the
# GPU exploration in logs/h200-pcie-host-moe/explore-1d01d56, every point beside the old
# settings in one run): the L2 wait polls with ld.acquire (poll = 1), fp8 Linear-2 takes
# 256-deep K steps in 3 stages (promotion every 256 products: Linear-1's promotion stays at
# 128; the fused check's error moved 0.906 -> 0.927 of its tolerance on the closest config),
# and the TMA descriptors are made on the host (host_desc). Since explore-4d4b402 fp8
# Linear-2 does not promote (acc_k2 = 0; compared with cuBLAS's unpromoted _scaled_mm,
# use_fast_accum) in 128-deep K steps, 4 stages: 7-15 % faster on every L2 point, the fused
# check unchanged (Linear-1's promotion every 128 products is what the check needs).
SETTINGS = {"bf16": moe.KernelConfig(block_k=64, block_k2=64, num_warps=8, num_stages=4,
                                     poll=1, host_desc=True),
            "fp8": moe.KernelConfig(block_k=128, block_k2=128, num_warps=8, num_stages=4,
                                    num_stages2=4, acc_k1=-1, acc_k2=0, poll=1,
                                    host_desc=True)}
PHASES = ("kernel", "signal", "gemm", "mainloop")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="hwkernels.moe_bench", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="records file (JSONL), appended to")
    ap.add_argument("--target", choices=("host", "peer"), default="host")
    ap.add_argument("--configs", default="", help="comma-separated config names or TOML files")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--suite", choices=("full", "quick"), default="full",
                    help="quick: 5 trials, no relaxed-signal runs, GEMMs at m = 4096 only")
    ap.add_argument("--phases", default=",".join(PHASES))
    ap.add_argument("--tune", action="store_true", help="pick block_k/warps/stages on GEMMs")
    ap.add_argument("--gemm-m", default="1024,4096", help="rows of the GEMM comparisons")
    ap.add_argument("--tune-out", default="", help="write the settings used (JSON)")
    ap.add_argument("--settings", default="", help="use the settings of a --tune-out file")
    ap.add_argument("--combine", choices=("host", "local"), default="host",
                    help="local: Combine into device memory (the no-link control)")
    ap.add_argument("--combine-hint", default="", choices=moe.COMBINE_HINTS,
                    help="the Combine stores' L2 hint (KernelConfig.combine_hint; records carry it)")
    ap.add_argument("--lead", default="scenario",
                    help="interleaved leads: scenario, default, candidates or rows, comma-separated")
    ap.add_argument("--budget-s", type=float, default=0.0,
                    help="stop starting new points after this many seconds (0: no limit)")
    ap.add_argument("--steady-s", type=float, default=0.0,
                    help="heat: before each timed kernel run, this many seconds of the same kernel back to back "
                         "(after the poison; records: timing steady), so it starts at the power cap's clock")
    ap.add_argument("--traces", default=None, help="a new .npz of each kernel point's last stamped run (one GPU)")
    args = ap.parse_args(argv)
    if args.traces and os.path.exists(args.traces):
        ap.error(f"--traces: {args.traces} exists (not overwritten)")
    return args


class Bench:
    ranks = SOLO        # N > 1: hwkernels.ranks.Ranks
    dest = None         # N > 1: the peer destination (every rank's receive buffer)
    leads = ("scenario",)   # --lead, parsed (moe_catalog.parse_leads)
    traces = None       # --traces: key -> array (hwkernels.moe_beside.add_trace)

    def __init__(self, args, ranks=None, dest=None):
        import torch

        if ranks is not None:
            self.ranks, self.dest = ranks, dest
        self.args = args
        self.device = getattr(self.ranks, "device", None) or torch.device("cuda", 0)
        props = torch.cuda.get_device_properties(self.device)
        self.sms = props.multi_processor_count
        self._platform = None
        self.commit, self.dirty = records.run_commit()
        self.settings = dict(SETTINGS)
        self.leads = getattr(args, "leads", self.leads)
        self.rows = []
        self.traces = {} if getattr(args, "traces", None) else None
        self.t0 = time.time()

    @property
    def steady_s(self) -> float:
        """--steady-s: seconds of heat before each timed kernel run (0: burst timing)."""
        return getattr(self.args, "steady_s", 0.0)

    def over_budget(self, share: float = 1.0) -> bool:
        lim = self.args.budget_s
        over = lim > 0 and time.time() - self.t0 > share * lim
        return bool(self.ranks.max_of(float(over)))     # N > 1: every rank decides alike

    @property
    def platform(self) -> dict:
        """Read at the first record, after kernels ran (nvidia-smi's clock then is not idle)."""
        from .platform_info import platform

        if self._platform is None:
            w, i = self.ranks.world, self.device.index or 0
            self._platform = platform(w, smi_sm_clock_mhz(), i, (i + 1) % max(w, 2),
                                      destination=self.args.target)
        return self._platform

    def record(self, kind, params, stats, check):
        if self.ranks.rank != 0:                 # N > 1: rank 0 writes every record
            return
        rec = records.make_record("moe", kind, params, stats, check, self.platform,
                                  self.commit, self.dirty)
        records.append_record(self.args.out, rec)

    def cfg_params(self, precision):
        return kernel_params(self.settings[precision])


def _measure(run, repeats, warmup=1, poison=None, check=None, ranks=SOLO, heat=None):
    """hwkernels.harness.measure: (ok, max_abs_err, stats dicts or None)."""
    from .harness import measure

    m = measure(run, repeats=repeats, warmup=warmup, poison=poison, check=check,
                sync=ranks.sync, agree=ranks.agree, heat=heat)
    return m.ok, m.max_abs_err, m.stats_dicts()


def run_kernel(b: Bench, cfg, data, lay, ref, out, cpu_out, schedule, signal=0,
               rank_outs=None, lead=None):
    """One (config, schedule): checked, timed; returns (ok, err, stats, table, stamps): stamps are the last
    checked stamped run's (relative ns) with --traces, else None.

    Stamped trials give every statistic; then the same table without stamps (checked once,
    then timed) gives kernel_nostamp_us, the instrumentation's cost. N > 1 (b.ranks):
    rank_outs are every rank's receive buffers, out this rank's; a barrier before and after
    every launch, times are per-trial maxima over ranks, checks AND-ed over ranks.
    """
    import torch

    from xsim.moe.schedule import schedule_table

    from .moe_gemm import _events_us

    shape = cfg.shape
    table = schedule_table(shape, lay, schedule, n_streams=b.sms, lead=lead)
    table.validate()
    kc = b.settings[shape.precision]
    conf = replace(kc, signal=signal, stamps=True)
    fused = moe.FusedMoE(shape, lay, table, data, out, conf, rank_outs=rank_outs)
    nan = float("nan")
    rk = b.ranks
    steady = b.steady_s > 0
    heat = _heater(fused, b.steady_s) if steady else None

    def run():
        try:
            us = _events_us(fused.enqueue, fused.prepare, sleep=not steady)
            fused.finish()
            if not fused.distinct_sms():
                raise RuntimeError("fused MoE programs did not run on distinct SMs")
            samples = kernel_samples(fused, us)
        except Exception as e:  # noqa: BLE001 (N > 1: every rank raises it, none waits)
            if rk.world == 1:
                raise
            samples = e
        return rk.pool(samples)

    def check(_res):
        ok, err = moe_reference.check(out, ref)
        if cpu_out is None:                                  # local Combine: device memory
            return ok, err
        probe = int(lay.row_token[0]), int(lay.row_slot[0])   # host bytes really written
        same = torch.equal(cpu_out[probe].float(), out[probe].float().cpu())
        return ok and same, err

    ok, err, stats = _measure(run, b.args.trials, 1, lambda: out.fill_(nan), check, rk, heat)
    stamps = relative_stamps(fused.stamp_array()) if ok and b.traces is not None else None
    if ok and signal == 0:
        plain = moe.FusedMoE(shape, lay, table, data, out, kc, rank_outs=rank_outs)
        out.fill_(nan)
        rk.sync()
        plain.launch()
        plain.finish()
        rk.sync()
        ok, err2 = rk.agree(*check(None))
        err = max(err, err2)
        if ok:
            us = []
            if steady:
                _heater(plain, b.steady_s)()
            for _ in range(b.args.trials):
                rk.sync()
                us.append(rk.max_of(_events_us(plain.enqueue, plain.prepare, sleep=not steady)))
            plain.finish()
            stats["kernel_nostamp_us"] = summarize(us).to_dict()
        else:
            stats = None
    return ok, err, stats, table, stamps


def _heater(fused, seconds: float):
    """``seconds`` of ``fused``'s launches back to back, enqueued (its length timed once after a first
    launch that compiles it, both untimed): the heat before a steady-state trial; the timed launch
    follows with no gap."""
    from .moe_gemm import _events_us

    fused.launch()
    fused.finish()
    est = max(_events_us(fused.enqueue, fused.prepare), 1.0)
    fused.finish()
    n = max(1, int(seconds * 1e6 // est))

    def heat():
        for _ in range(n):
            fused.launch()
    return heat


def _one_config(b: Bench, i, cfg, cache, signal_too):
    from xsim.moe.layout import expert_layout
    from xsim.moe.routing import route

    s = cfg.shape
    local, rank_outs = b.args.combine == "local", None
    if b.ranks.world > 1:                 # EP = N: moe_dist.py (Dispatch done here)
        data, lay, ref, out, rank_outs = moe_dist.config_inputs(cfg, b.ranks, b.dest)
        cpu_out = None
    else:
        key = (s.hidden, s.intermediate, s.experts, s.tokens, s.precision, cfg.seed)
        if key not in cache:
            cache.clear()
            cache[key] = moe_reference.make_inputs(s, cfg.seed, b.device)
        data = cache[key]
        lay = expert_layout(s, route(s, cfg.routing, cfg.skew, cfg.seed))
        ref = moe_reference.reference(data, lay, s.topk)
        out, cpu_out, _buf = (local_out if local else host_out)(s, b.device)
    leads = getattr(b.args, "leads", b.leads)
    points = [("interleaved", lead) for lead in leads_for(cfg, leads, b.sms)]
    points = [("wave", None)] + points if i % 2 == 0 else points + [("wave", None)]
    kind = "kernel_local" if local else "kernel"
    for schedule, lead in points:
        ok, err, stats, table, stamps = run_kernel(b, cfg, data, lay, ref, out, cpu_out, schedule,
                                                   rank_outs=rank_outs, lead=lead)
        dest = "local" if local else b.args.target
        params = cfg.params(schedule, table.lead, dest) | b.cfg_params(s.precision)
        if b.steady_s > 0:
            params |= {"timing": "steady", "steady_s": b.steady_s}
        b.record(kind, params, stats, {"ok": ok, "max_abs_err": err})
        label = schedule if lead is None else f"int@{lead:g}"
        b.rows.append((kind, cfg.name, label, ok, stats))
        if stamps is not None:
            add_trace(b.traces, f"{cfg.name}|{label}", dest, stamps, table, lay, s)
        if local:
            fused_mainloop_records(b, cfg, params, stats, ok)
            continue
        if signal_too and ok:
            ok2, err2, st2, _, _ = run_kernel(b, cfg, data, lay, ref, out, cpu_out, schedule, 1,
                                           rank_outs, lead)
            keep = None if st2 is None else {k: st2[k] for k in ("kernel_us", "signal_us",
                                                                  "span_us", "wait_us")}
            b.record("signal", params | {"signal": "relaxed"}, keep,
                     {"ok": ok2, "max_abs_err": err2})
            b.rows.append(("signal", cfg.name, label, ok2, st2))


def kernel_phase(b: Bench, configs, signal_too: bool):
    import traceback

    cache = {}
    for i, cfg in enumerate(configs):
        t0 = time.time()
        if b.over_budget(0.75):
            print(f"{cfg.name}: skipped (time budget)", flush=True)
            continue
        try:
            _one_config(b, i, cfg, cache, signal_too and not b.over_budget(0.45))
        except Exception as e:  # noqa: BLE001 (one config's failure must not end the sweep)
            traceback.print_exc()
            b.rows.append(("error", cfg.name, type(e).__name__, False, None))
        if b.traces:
            save_traces(b.args.traces, b.traces, b.commit)   # after every config: a killed run keeps the rest
        print(f"{cfg.name}: {time.time() - t0:.1f} s", flush=True)


def main(argv=None):
    args = parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    problem = moe_dist.world_problem(args, world)
    if problem:
        print(f"hwkernels.moe_bench: {problem}", file=sys.stderr)
        return 2
    if args.suite == "quick":
        args.trials, args.gemm_m = min(args.trials, 5), "4096"
        args.phases = ",".join(p for p in args.phases.split(",") if p != "signal")
    phases = {p for p in args.phases.split(",") if p}
    if phases - set(PHASES):
        print(f'"phases" must be among {PHASES}', file=sys.stderr)
        return 2
    try:
        args.leads = parse_leads(args.lead)
    except ValueError as e:
        print(f"hwkernels.moe_bench: {e}", file=sys.stderr)
        return 2
    configs = load_configs(args.configs)
    try:
        configs = [moe_dist.with_ep(c, world) for c in configs] if world > 1 else configs
    except ValueError as e:
        print(f"hwkernels.moe_bench: {e}", file=sys.stderr)
        return 2
    if world > 1 and args.traces:
        print("hwkernels.moe_bench: --traces is for one GPU", file=sys.stderr)
        return 2
    if world > 1:
        phases &= {"kernel", "signal"}           # gemm / mainloop: one-GPU measurements
    b = Bench(args, *moe_dist.join(configs)) if world > 1 else Bench(args)
    t0 = b.t0
    if args.settings:
        b.settings.update(read_settings(args.settings))
    if args.tune:
        tune(b, configs)
    b.settings = {p: replace(kc, combine_hint=args.combine_hint) for p, kc in b.settings.items()}
    print("settings:", {k: b.cfg_params(k) for k in b.settings}, flush=True)
    if args.tune_out:
        write_settings(args.tune_out, b.settings)
    if "kernel" in phases:
        kernel_phase(b, configs, "signal" in phases)
    if phases & {"gemm", "mainloop"}:
        gemm_phase(b, configs, "mainloop" in phases, "gemm" in phases)
    print(f"done in {time.time() - t0:.0f} s", flush=True)
    if b.ranks.rank == 0:
        print_table(b.rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
