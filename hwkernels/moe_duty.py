"""The fused MoE kernel's own clock at the power cap against its SMs' busy fraction (GPU only).

    python -m hwkernels.moe_duty --out OUT.jsonl [--configs A,B|x.toml] [--schedules wave,interleaved]
           [--gaps 0,0.5,1.5] [--repeats 3] [--heat-s 0.25] [--run-s 0.1] [--smi-ms 20]

The steady MoE runs clock the interleaved kernel 3-16 % below the expert-wave kernel over the host link
(docs/moe.md, "Steady-state timing"), more than the FA kernel's law (``hwkernels.fa_duty``) says. This
measures the law on the MoE kernel itself, without the link: the local-Combine kernel (Combine into
device memory, ``--combine local`` of ``moe_bench``) of each config and schedule, launched back to back,
each launch followed by an idle gap of ``g`` times the kernel's own length (a one-thread spin on
%globaltimer, ``hwkernels.spin``: what the SMs do in a gap hardly moves the clock, FA's store and idle
gaps agreed within 1.5 %). ``g = 0`` is the anchor: the kernel alone at the cap, its steady clock.

Each point is ``harness.measure``d: poison the destination, ``heat_s`` of the same loop, then ``run_s``
of it timed by CUDA events; the destination is checked against the torch reference after every run.
Per run: the period (one launch and its gap, us), the kernel's own clock (CLK: its programs' cycles over
nanoseconds), its busy fraction (its programs' nanoseconds over programs x wall time), its mean program
length, and nvidia-smi's board power and clock (read-only). Records: experiment "moe", kind "duty"
(``params.gap_kind`` "none" or "idle", ``gap_ratio`` g, ``timing`` "steady").
"""

import argparse
import sys

from . import records

GAPS = "0,0.5,1.5"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="hwkernels.moe_duty", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="records file (JSONL), appended to")
    ap.add_argument("--configs", default="", help="comma-separated config names or TOML files (default: all)")
    ap.add_argument("--schedules", default="wave,interleaved")
    ap.add_argument("--gaps", default=GAPS, help="idle gap per launch, in kernel lengths (comma-separated)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--heat-s", type=float, default=0.25)
    ap.add_argument("--run-s", type=float, default=0.1)
    ap.add_argument("--smi-ms", type=int, default=20)
    ap.add_argument("--budget-s", type=float, default=0.0, help="start no config after this many seconds")
    args = ap.parse_args(argv)
    try:
        args.gaps = sorted({float(g) for g in args.gaps.split(",") if g})
    except ValueError:
        ap.error(f"--gaps: not a list of numbers: {args.gaps!r}")
    args.schedules = [s for s in args.schedules.split(",") if s]
    bad = [s for s in args.schedules if s not in ("wave", "interleaved")]
    if bad:
        ap.error(f"--schedules: {bad[0]!r} is not wave or interleaved")
    if not args.gaps or any(g < 0 for g in args.gaps) or args.repeats < 1 or args.heat_s < 0 or args.run_s <= 0:
        ap.error("--gaps must be >= 0, --repeats >= 1, --heat-s >= 0 and --run-s > 0")
    return args


class Loop:
    """The local-Combine kernel of one (config, schedule) launched ``n`` times, each launch followed by a
    spin of ``gap_ns``; the CLK sums accumulate over the whole loop (only ``reset`` clears them)."""

    def __init__(self, fused, programs: int):
        self.fused, self.programs = fused, programs

    def enqueue(self, n: int, gap_ns: int):
        from .fa_duty import spin

        f = self.fused
        for _ in range(n):
            f.l2_full.fill_(f.ready_count)
            f.err.zero_()
            f.enqueue()
            spin(gap_ns)

    def timed(self, n: int, gap_ns: int, smi) -> dict:
        """``n`` launches timed by CUDA events: period, CLK clock, busy fraction, program length, power."""
        import time

        import torch

        self.fused.clock.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.time()
        start.record()
        self.enqueue(n, gap_ns)
        end.record()
        end.synchronize()
        t1 = time.time()
        self.fused.finish()
        period = start.elapsed_time(end) * 1e3 / n
        ns = int(self.fused.clock[1].item())
        out = {"period_us": period, "busy_fraction": ns * 1e-3 / (self.programs * period * n),
               "program_us": ns * 1e-3 / (self.programs * n)}
        mhz = self.fused.run_clock_mhz()
        if mhz is not None:
            out["run_clock_mhz"] = mhz
        w = smi.window(t0, t1) if smi is not None else {}
        if w.get("samples", 0):
            out["power_w"], out["smi_clock_mhz"] = w["power_w"], w["smi_clock_mhz"]
        return out


def measure_point(loop, out, ref, kernel_us: float, gap: float, args, smi):
    """harness.measure of one gap: poison, heat, timed run, the destination checked."""
    from . import moe_reference
    from .harness import measure

    gap_ns = round(gap * kernel_us * 1e3)
    period = kernel_us * (1 + gap)
    n_run = max(2, int(args.run_s * 1e6 // period))
    n_heat = max(1, int(args.heat_s * 1e6 // period))
    return measure(lambda: loop.timed(n_run, gap_ns, smi), args.repeats, warmup=1,
                   poison=lambda: out.fill_(float("nan")), heat=lambda: loop.enqueue(n_heat, gap_ns),
                   check=lambda _: moe_reference.check(out, ref))


def run_config(cfg, args, commit, dirty, smi, device, sms, plat) -> list:
    """Every (schedule, gap) point of one config; (config, schedule, gap, ok, medians) rows."""
    from xsim.moe.layout import expert_layout
    from xsim.moe.routing import route
    from xsim.moe.schedule import schedule_table

    from . import moe, moe_reference
    from .moe_bench import SETTINGS
    from .moe_bench_io import kernel_params
    from .moe_bench_io import local_out
    from .moe_catalog import leads_for
    from .moe_gemm import _events_us

    s = cfg.shape
    data = moe_reference.make_inputs(s, cfg.seed, device)
    lay = expert_layout(s, route(s, cfg.routing, cfg.skew, cfg.seed))
    ref = moe_reference.reference(data, lay, s.topk)
    out, _, _ = local_out(s, device)
    kc = SETTINGS[s.precision]
    rows = []
    for schedule in args.schedules:
        lead = leads_for(cfg, ("scenario",), sms)[0] if schedule == "interleaved" else None
        table = schedule_table(s, lay, schedule, n_streams=sms, lead=lead)
        table.validate()
        fused = moe.FusedMoE(s, lay, table, data, out, kc)
        fused.launch()
        fused.finish()
        kernel_us = min(_events_us(fused.enqueue, fused.prepare) for _ in range(3))
        fused.finish()
        loop = Loop(fused, fused.n_streams)
        params = (cfg.params(schedule, table.lead, "local") | kernel_params(kc)
                  | {"timing": "steady", "heat_s": args.heat_s, "run_s": args.run_s, "repeats": args.repeats,
                     "programs": fused.n_streams, "kernel_us_burst": kernel_us})
        for gap in args.gaps:
            m = measure_point(loop, out, ref, kernel_us, gap, args, smi)
            p = params | {"gap_kind": "none" if gap == 0 else "idle", "gap_ratio": gap}
            st = m.stats_dicts()
            records.append_record(args.out, records.make_record("moe", "duty", p, st, m.check_dict(), plat,
                                                                commit, dirty))
            med = {k: v["median"] for k, v in (st or {}).items()}
            rows.append((cfg.name, schedule, gap, m.ok, med))
            print(f"{cfg.name} {schedule} gap {gap:g}: ok={m.ok} err={m.max_abs_err:.3g} "
                  + " ".join(f"{k}={v:.4g}" for k, v in med.items()), flush=True)
    return rows


def main(argv=None) -> int:
    import torch

    from .fa_power import Sampler
    from .moe_bench_io import one_gpu_session
    from .moe_catalog import load_configs, within_budget

    args = parse_args(argv)
    configs = load_configs(args.configs)
    # the host link's platform though the Combine stays local ("local" named no link on one GPU:
    # nvidia-smi topo's CPU affinity, "0-15"); the params say where the Combine went
    device, sms, commit, dirty, plat = one_gpu_session()
    smi = Sampler(args.smi_ms)
    rows, all_ok = [], True
    for cfg in within_budget(configs, args.budget_s):
        got = run_config(cfg, args, commit, dirty, smi, device, sms, plat)
        rows += got
        all_ok &= all(ok for *_, ok, _ in got)
        torch.cuda.empty_cache()
    smi.stop()
    nan = float("nan")
    print("| config | schedule | gap | ok | period us | busy | CLK MHz | smi MHz | power W |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for name, schedule, gap, ok, med in rows:
        print(f"| {name} | {schedule} | {gap:g} | {ok} | {med.get('period_us', nan):.1f} | "
              f"{med.get('busy_fraction', nan):.3f} | {med.get('run_clock_mhz', nan):.0f} | "
              f"{med.get('smi_clock_mhz', nan):.0f} | {med.get('power_w', nan):.0f} |")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
