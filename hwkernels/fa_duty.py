"""The SM clock at the power cap against the SMs' busy fraction: the duty-cycle microbenchmark (GPU only).

    python -m hwkernels.fa_duty --out OUT.jsonl [--seq-lens 2048,8192,32768] [--gaps 0,1,2,4,8]
           [--gap-kinds store,idle] [--variants fused,serial] [--repeats 5] [--heat-s 0.25] [--run-s 0.1]
           [fa_bench's kernel options: --mainloop gluon --stagger-us design]

At the 700 W cap a kernel that keeps every SM busy runs at a lower clock than one whose SMs wait part of
the time: a link-bound fused kernel clocks up to 14 % above FA-only (docs/fa-a2a.md, "Run 15"). This
measures that law on FA-only itself, without any remote variant's own timing: each ring slot runs the
FA-only kernel, then a gap of ``k`` units; a unit is one launch of the A2A store kernel over the host link
(``store``: the SMs stream the slot's bytes to host memory, as a fused kernel's SMs do while they wait on
its stores) or a one-thread spin on %globaltimer for as long (``idle``, the control). Each point is
``harness.measure``d: poison, ``heat_s`` of the same graph back to back, then ``run_s`` of replays timed by
CUDA events; the check after every run covers the slots the ring wrote. Per run: the FA kernel's own clock
(CLK: its programs' cycles over nanoseconds), the busy fraction (its programs' nanoseconds over
programs x wall time, the quantity the clock model reads) and nvidia-smi's board power (read-only). The
``--variants`` run the same way as references (their rings as fa_bench times them). Records: experiment
"power", kind "duty" (``params.gap_kind`` none / store / idle) or "variant".
"""

import argparse
import sys

from . import fa_bench_args, records

GAP_KINDS = ("store", "idle")


def spin(ns: int) -> None:
    """One program, one warp, busy-waiting ``ns`` nanoseconds of %globaltimer (an SM-idle gap). The
    kernel is imported here, not with this module: decorating Triton kernels at import would fix the
    interpreter setting for every kernel module a CPU test imports later."""
    from .spin import spin_kernel

    if ns > 0:
        spin_kernel[(1,)](int(ns), num_warps=1)


def duty_ring(case, kind: str, units: int, unit_ns: int):
    """Per ring slot: the FA-only kernel, then ``units`` A2A store launches (``store``) or a spin of
    ``units * unit_ns`` (``idle``); the variant whose check covers it (serial writes every slot)."""
    if kind not in ("none",) + GAP_KINDS:
        raise ValueError(f'"gap_kind" must be one of {("none",) + GAP_KINDS}, got {kind!r}.')

    def ring():
        for s in range(case.slots):
            case.enqueue("fa-only", s)
            if kind == "store":
                for _ in range(units):
                    case.store_out(s)
            elif kind == "idle":
                spin(units * unit_ns)
    return ring, ("serial" if kind == "store" and units > 0 else "fa-only")


def timed_run(case, graph, seconds: float, est_us: float, smi) -> dict:
    """``graph`` back to back for about ``seconds`` (``fa_power.block``): per-slot period (us), the FA
    kernel's clock (CLK), its busy fraction, and the board power over the run (nvidia-smi, where sampled)."""
    from .fa_power import block

    b = block(case, None, graph, seconds, est_us)
    wall_us = b["kernel_us"] * b["replays"] * case.slots
    ns = int(case.clock[1].item())
    out = {"period_us": b["kernel_us"], "busy_fraction": ns * 1e-3 / (case.programs * wall_us)}
    if b["run_clock_mhz"] is not None:
        out["run_clock_mhz"] = b["run_clock_mhz"]
    if smi is not None:
        w = smi.window(b["t0"], b["t1"])
        if w.get("samples", 0):
            out["power_w"] = w["power_w"]
            out["smi_clock_mhz"] = w["smi_clock_mhz"]
    return out


def measure_ring(case, ring, variant: str, args, smi):
    """harness.measure of one ring: poison, heat, timed run, receiver-side check."""
    from .harness import capture_graph, graph_replay_us, measure

    graph = capture_graph(ring)
    est = graph_replay_us(ring, 2, graph=graph)

    def heat():
        n = max(1, int(args.heat_s * 1e6 // est))
        for _ in range(n):
            graph.replay()

    return measure(lambda: timed_run(case, graph, args.run_s, est, smi), args.repeats, warmup=1,
                   poison=lambda: case.poison(variant), heat=heat, check=lambda _: case.check(variant))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="hwkernels.fa_duty", description=__doc__.splitlines()[0])
    ap.add_argument("--gaps", default="0,1,2,4,8", help="gap units per slot (comma-separated)")
    ap.add_argument("--gap-kinds", default="store,idle")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--heat-s", type=float, default=0.25)
    ap.add_argument("--run-s", type=float, default=0.1)
    ap.add_argument("--smi-ms", type=int, default=20)
    own, rest = ap.parse_known_args(argv)
    kinds = [k for k in own.gap_kinds.split(",") if k]
    bad = [k for k in kinds if k not in GAP_KINDS]
    if bad:
        ap.error(f"--gap-kinds: {bad[0]!r} is not one of {', '.join(GAP_KINDS)}")
    try:
        own.gaps = sorted({int(g) for g in own.gaps.split(",") if g})
    except ValueError:
        ap.error(f"--gaps: not a list of integers: {own.gaps!r}")
    if any(g < 0 for g in own.gaps) or own.repeats < 1 or own.heat_s < 0 or own.run_s <= 0:
        ap.error("--gaps must be >= 0, --repeats >= 1, --heat-s >= 0 and --run-s > 0")
    own.gap_kinds = kinds
    if "--seq-lens" not in rest:
        rest += ["--seq-lens", "2048,8192,32768"]
    return own, fa_bench_args.parse_args(rest)


def main(argv=None) -> int:
    import torch

    from . import fa_bench
    from .fa_power import Sampler
    from .fa_stagger import design_config, design_platform
    from .fa_variants import Case
    from .harness import graph_replay_us

    own, args = parse_args(argv)
    cfg = fa_bench_args.kernel_config(args)
    shapes = fa_bench_args.shapes(args)
    programs = args.programs or torch.cuda.get_device_properties(0).multi_processor_count
    rule = {}
    if args.stagger_us == "design":
        design_platform(args.target, args.profile)
        cfg, rule = design_config(cfg, args.target, args.profile, programs, args.block_m, args.head_dim, args.sp)
    variants = [v for v in (args.variants or "fused,serial").split(",") if v]
    host = fa_bench._host_view(fa_bench.host_bytes_for(shapes), torch.device("cuda", 0))
    commit, dirty = records.run_commit()
    smi = Sampler(own.smi_ms)
    rows, all_ok = [], True
    for shape in shapes:
        case = Case(shape, cfg, host.cuda, fa_bench.slots_for(shape), programs)
        unit_us = graph_replay_us(lambda: case.enqueue("a2a-store", 0), 5)
        points = [("duty", "none", 0)] + [("duty", k, g) for k in own.gap_kinds for g in own.gaps if g > 0]
        points += [("variant", v, 0) for v in variants]
        for rkind, kind, units in points:
            if rkind == "variant":
                ring, checked = case.ring(kind), kind
            else:
                ring, checked = duty_ring(case, kind, units, round(unit_us * 1e3))
            m = measure_ring(case, ring, checked, own, smi)
            params = {"seq_len": shape.seq_len, "batch": shape.batch, "heads": shape.heads,
                      "head_dim": shape.head_dim, "sp": shape.sp, "block_m": shape.block_m,
                      "block_n": shape.block_n, "programs": programs, "slots": case.slots,
                      "mainloop": cfg.mainloop, "destination": args.target, "repeats": own.repeats,
                      "heat_s": own.heat_s, "run_s": own.run_s, "unit_us": unit_us}
            if rkind == "variant":
                params.update(variant=checked, stagger_us=cfg.stagger_us, **rule)
            else:
                params.update(gap_kind=kind, gap_units=units)
            st = m.stats_dicts()
            mhz = (st or {}).get("run_clock_mhz", {}).get("median", 0.0)
            rec = records.make_record("power", rkind, params, st, m.check_dict(),
                                      fa_bench._platform(mhz, args.target), commit, dirty)
            records.append_record(args.out, rec)
            all_ok &= m.ok
            med = {k: v["median"] for k, v in (st or {}).items()}
            label = kind if rkind == "duty" else f"variant:{kind}"
            rows.append((shape.seq_len, label, units, m.ok, med))
            print(f"M={shape.seq_len} {label} x{units}: ok={m.ok} err={m.max_abs_err:.3g} {med}", flush=True)
        del case
        torch.cuda.empty_cache()
    smi.stop()
    print("| M | gap | units | ok | period us | busy | CLK MHz | smi MHz | power W |")
    print("| ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    nan = float("nan")
    for m, kind, units, ok, med in rows:
        print(f"| {m} | {kind} | {units} | {ok} | {med.get('period_us', nan):.1f} | "
              f"{med.get('busy_fraction', nan):.3f} | {med.get('run_clock_mhz', nan):.0f} | "
              f"{med.get('smi_clock_mhz', nan):.0f} | {med.get('power_w', nan):.0f} |")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
