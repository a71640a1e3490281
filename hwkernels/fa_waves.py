"""How aligned the attention kernel's programs are, wave by wave (its stamps, one GPU).

    python -m hwkernels.fa_waves --out DIR [--seq-lens 8192,16384,32768,65536]
                                 [--variants fa-only,fused,fused-paced] [--mainloop gluon] [--runs 3]
                                 [--stagger-us 0,design]

The DES draws each tile's Q-loop independently with the spread measured over every tile of a
launch (the report's ``qloop_cv``). That spread has two parts: the one between the programs of one
wave, which sets how far apart their tile-boundary stores reach the link, and the drift of the
whole wave over the launch (the SM clock moves for every SM at once), which does not separate
them. This runner keeps both apart: per (variant, M), ``runs`` instrumented launches of
fa_variants.Case (each a ring of
launches as fa_bench times them, the last one stamped, every slot checked on the receiver side), their raw stamps in DIR/fa-waves.npz and
one summary per launch in DIR/fa-waves.jsonl (:func:`wave_stats`); a short table last.
``--stagger-us``: each value (microseconds, or ``design``: eq. 10's S*, fa_stagger) a kernel of its
own, so one call says whether staggered programs keep their phases wave after wave (the first and
the last full wave's start skew, and how the last wave's start order follows the first's).
"""

import argparse
import json
import os
import sys

import numpy as np

from .fa_variants import program_ghz

PCT = (10, 90)


def _phase_kept(start: np.ndarray) -> float | None:
    """Pearson correlation of the programs' start offsets in the last full wave with the first's."""
    first, last = start[0] - start[0].min(), start[-1] - start[-1].min()
    if start.shape[0] < 2 or first.std() == 0 or last.std() == 0:
        return None
    return float(np.corrcoef(first, last)[0, 1])


def wave_stats(stamps: np.ndarray, programs: int) -> dict:
    """The spread of a launch's stamped tiles (int64 [n_tiles, 6], fa_variants.tile_times's
    layout; tile t runs on program t % programs as its (t // programs)-th tile, so the full waves
    are the first programs * (n_tiles // programs) tiles). Q-loops in us from %clock64 at each
    program's mean clock, starts from %globaltimer. Per full wave: the Q-loops' p10 and p90 over
    their mean, and the starts' p90 - p10 (how far apart the programs begin the wave's tile).
    Returns the medians over the waves, the same quantiles over every tile (what the report's
    qloop_cv reads), the wave means' coefficient of variation (the common drift), the first and
    the last full wave's start skew and the correlation of the programs' start offsets in the
    last wave with those in the first (1: the phases kept; None with one wave or no skew)."""
    st = np.asarray(stamps, dtype=np.int64)
    waves = st.shape[0] // programs
    if waves < 1:
        raise ValueError(f"{st.shape[0]} tiles on {programs} programs: no full wave")
    ghz = program_ghz(st, programs)
    full = st[:waves * programs]
    qloop = ((full[:, 4] - full[:, 3]) / np.tile(ghz, waves) / 1e3).reshape(waves, programs)
    start = (full[:, 0] / 1e3).reshape(waves, programs)
    lo, hi = np.percentile(qloop, PCT, axis=1)
    mean = qloop.mean(axis=1)
    s_lo, s_hi = np.percentile(start, PCT, axis=1)
    a_lo, a_hi = np.percentile(qloop, PCT)
    return {"waves": int(waves), "programs": int(programs),
            "qloop_mean_us": float(qloop.mean()),
            "wave_p10_over_mean": float(np.median(lo / mean)),
            "wave_p90_over_mean": float(np.median(hi / mean)),
            "all_p10_over_mean": float(a_lo / qloop.mean()),
            "all_p90_over_mean": float(a_hi / qloop.mean()),
            "wave_means_cv": float(mean.std() / mean.mean()),
            "start_skew_us": float(np.median(s_hi - s_lo)),
            "start_skew_us_max": float((s_hi - s_lo).max()),
            "start_skew_us_first": float(s_hi[0] - s_lo[0]),
            "start_skew_us_last": float(s_hi[-1] - s_lo[-1]),
            "phase_kept": _phase_kept(start),
            "clock_mhz": float(np.median(ghz) * 1e3)}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="hwkernels.fa_waves", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for fa-waves.jsonl and fa-waves.npz")
    ap.add_argument("--seq-lens", default="8192,16384,32768,65536")
    ap.add_argument("--variants", default="fa-only,fused,fused-paced")
    ap.add_argument("--mainloop", choices=("triton", "gluon"), default="gluon")
    ap.add_argument("--runs", type=int, default=3, help="instrumented launches per (variant, M)")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--sp", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--stagger-us", default="0",
                    help="comma list: gluon fused and cc with program p starting S p / K us late "
                         "(fa_bench --stagger-us; 'design': eq. 10's S* on h200-pcie-host)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    import torch

    from . import records
    from .fa import FAShape
    from .fa_bench import _host_view, host_bytes_for, slots_for
    from .fa_stagger import design_config, design_platform, stagger_number
    from .fa_variants import Case, KernelConfig

    args = parse_args(argv)
    try:
        ms = [int(m) for m in args.seq_lens.split(",") if m]
        variants = [v for v in args.variants.split(",") if v]
        staggers = [v for v in args.stagger_us.split(",") if v]
        if args.runs < 1 or not ms or not variants or not staggers:
            raise ValueError("needs --runs >= 1, at least one M, one variant and one stagger")
        for v in staggers:
            stagger_number(v)
        if any(float(stagger_number(v)) or v == "design" for v in staggers) and args.mainloop != "gluon":
            raise ValueError("--stagger-us needs --mainloop gluon (the stagger is its STAGGER_NS)")
        if "design" in staggers:
            design_platform("host", "")
    except ValueError as exc:
        print(f"fa_waves: {exc}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    shapes = [FAShape(batch=max(1, args.tokens // m), heads=args.heads, seq_len=m, head_dim=128,
                      sp=args.sp) for m in ms]
    dev = torch.device("cuda", 0)
    host = _host_view(host_bytes_for(shapes), dev)
    programs = torch.cuda.get_device_properties(dev).multi_processor_count
    commit, _ = records.run_commit()
    base = KernelConfig(mainloop=args.mainloop)
    cfgs = [design_config(base, "host", "", programs, 128, 128, args.sp)[0] if v == "design" else
            KernelConfig(mainloop=args.mainloop, stagger_us=stagger_number(v)) for v in staggers]
    arrays, rows, ok_all = {}, [], True
    for shape, cfg in ((s, c) for s in shapes for c in cfgs):
        case = Case(shape, cfg, host.cuda, slots_for(shape), programs)
        k = min(programs, shape.n_tiles)
        for variant in variants:
            case.ring(variant)()                       # warm-up (compiles)
            for run in range(args.runs):
                case.poison(variant)
                case.stamps.zero_()
                for slot in range(case.slots):          # a ring, as timed; the last one stamped
                    case.enqueue(variant, slot, instrument=slot == case.slots - 1)
                torch.cuda.synchronize()
                ok, err = case.check(variant)
                st = case.stamps.cpu().numpy()
                row = {"variant": variant, "seq_len": shape.seq_len, "run": run, "ok": bool(ok),
                       "max_abs_err": float(err), "mainloop": args.mainloop, "commit": commit,
                       "stagger_us": cfg.stagger_us}
                if ok:
                    row |= wave_stats(st, k)
                    arrays[f"{variant}_{shape.seq_len}_s{cfg.stagger_us:g}_{run}"] = st
                ok_all &= bool(ok)
                rows.append(row)
        del case
        torch.cuda.empty_cache()
    with open(os.path.join(args.out, "fa-waves.jsonl"), "a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    np.savez_compressed(os.path.join(args.out, "fa-waves.npz"), **arrays)
    print(f"{'M':>6} {'variant':>12} {'S us':>5} {'run':>3} {'waves':>5} {'wave p10-p90/mean':>17} "
          f"{'all p10-p90/mean':>16} {'drift cv':>8} {'skew us':>7} {'first':>6} {'last':>6} "
          f"{'kept':>5} {'MHz':>5}")
    for r in rows:
        if r["ok"]:
            kept = "-" if r["phase_kept"] is None else f"{r['phase_kept']:.2f}"
            print(f"{r['seq_len']:>6} {r['variant']:>12} {r['stagger_us']:>5g} {r['run']:>3} {r['waves']:>5} "
                  f"{r['wave_p90_over_mean'] - r['wave_p10_over_mean']:>17.4f} "
                  f"{r['all_p90_over_mean'] - r['all_p10_over_mean']:>16.4f} "
                  f"{r['wave_means_cv']:>8.4f} {r['start_skew_us']:>7.2f} {r['start_skew_us_first']:>6.1f} "
                  f"{r['start_skew_us_last']:>6.1f} {kept:>5} {r['clock_mhz']:>5.0f}")
        else:
            print(f"{r['seq_len']:>6} {r['variant']:>12} {r['stagger_us']:>5g} {r['run']:>3} "
                  f"CHECK FAILED ({r['max_abs_err']:.3g})")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
