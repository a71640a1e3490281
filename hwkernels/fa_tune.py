"""GPU check and tuning of the FA kernels before the sweep (prints, writes JSON; no records).

    python -m hwkernels.fa_tune --json OUT.json

1. FA-only over (b_m, b_n, num_warps, num_stages, tma) at M = 8K (d = 128 and 64), each
   checked before it is timed, beside torch's cuDNN SDPA on the same shape;
2. every variant checked on the receiver side at M = 1K with the best configurations
   (d = 128, N = 4, rank 2; d = 64, N = 2, rank 0);
3. (--fences) fused vs completion-coupled (fence.sc.sys, release atomic) at a few M and b_m = 128 / 64:
   kernel time and per-tile store span, to see which fence waits for the host drain.
"""

import argparse
import itertools
import json
import sys

import numpy as np

from .fa import FAShape
from .fa_bench import _host_view, host_bytes_for, measure_variant, slots_for
from .fa_variants import VARIANTS, Case, KernelConfig

# (block_m, block_n, num_warps, num_stages, tma); sm_90 shared memory checked offline:
# TMA 128/128/3 stages 229 KB, 128/128/2 164 KB, 128/64/3 131 KB; pointer loads 48-64 KB.
CONFIGS = [(128, 128, 8, 3, True), (128, 128, 8, 2, True), (128, 64, 4, 3, True),
           (128, 64, 8, 3, True), (128, 64, 8, 4, True), (128, 64, 4, 3, False)]
CONFIGS_D64 = [(128, 64, 4, 3, True), (128, 128, 8, 3, True)]


def _shape(m, d=128, bm=128, bn=128, sp=4, heads=32, rank=0, tokens=4096):
    return FAShape(batch=max(1, tokens // m), heads=heads, seq_len=m, head_dim=d, sp=sp,
                   rank=rank, block_m=bm, block_n=bn)


def correctness(host, programs, best128, best64) -> list[dict]:
    """Every variant at M = 1K on the receiver side: d = 128, N = 4, rank 2; d = 64, N = 2, rank 0."""
    out = []
    for (d, sp, rank, cfg), variant in itertools.product(
            [(128, 4, 2, best128), (64, 2, 0, best64)], VARIANTS):
        bm, bn, w, st, tma = cfg
        shape = _shape(1024, d=d, bm=bm, bn=bn, sp=sp, rank=rank, tokens=2048)
        case = Case(shape, KernelConfig(w, st, tma), host, 2, programs)
        try:
            case.poison(variant)
            for s in range(case.slots):
                case.enqueue(variant, s)
            import torch
            torch.cuda.synchronize()
            ok, err = case.check(variant)
            out.append({"d": d, "sp": sp, "rank": rank, "cfg": cfg, "variant": variant,
                        "ok": ok, "err": err})
        except Exception as exc:  # report and go on: the table says what failed
            out.append({"d": d, "sp": sp, "rank": rank, "cfg": cfg, "variant": variant,
                        "ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]})
        print(out[-1], flush=True)
    return out


def time_variant(shape, cfg, host, programs, variant, repeats=5, instrument=True) -> dict:
    case = Case(shape, cfg, host, slots_for(shape), programs)
    try:
        m, _, _ = measure_variant(case, variant, repeats, instrument)
    except Exception as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    res = {"ok": m.ok, "err": m.max_abs_err}
    if m.ok:
        for k, s in m.stats.items():
            res[k] = s.median
            if k == "issue_span_us":
                res["issue_span_p90_us"] = s.p90
    return res


def tuning(host, programs) -> list[dict]:
    rows = []
    for m, d in [(8192, 128), (8192, 64)]:
        mine = []
        for bm, bn, w, st, tma in (CONFIGS if d == 128 else CONFIGS_D64):
            r = time_variant(_shape(m, d=d, bm=bm, bn=bn), KernelConfig(w, st, tma), host,
                             programs, "fa-only", instrument=False)
            mine.append({"M": m, "d": d, "cfg": [bm, bn, w, st, tma], **r})
            print(mine[-1], flush=True)
        cud = time_variant(_shape(m, d=d), KernelConfig(), host, programs, "sdpa-cudnn")
        for r in mine:
            if r.get("ok") and cud.get("ok"):
                r["fa_over_cudnn"] = cud["kernel_us"] / r["kernel_us"]
        rows += mine + [{"M": m, "d": d, "cfg": "cudnn", **cud}]
        print(rows[-1], flush=True)
    return rows


def best_config(rows, d=128):
    good = [r for r in rows if r["d"] == d and r["cfg"] != "cudnn" and r.get("ok")]
    return list(min(good, key=lambda r: r["kernel_us"])["cfg"]) if good else [128, 64, 4, 3, False]


def fences(host, programs, cfg_row) -> list[dict]:
    bm, bn, w, st, tma = cfg_row
    rows = []
    for m, block_m in [(1024, 128), (4096, 128), (16384, 128), (4096, 64)]:
        shape = _shape(m, bm=block_m, bn=bn if block_m == 128 else 64)
        for variant in ("sdpa-cudnn", "fa-only", "a2a-store", "a2a-ce", "serial", "fused",
                        "cc-asm", "cc-atomic"):
            r = time_variant(shape, KernelConfig(w if block_m == 128 else 4, st, tma), host,
                             programs, variant)
            rows.append({"M": m, "block_m": block_m, "variant": variant, **r})
            print(rows[-1], flush=True)
    return rows


def main(argv=None) -> int:
    import torch

    ap = argparse.ArgumentParser(prog="hwkernels.fa_tune")
    ap.add_argument("--json", required=True)
    ap.add_argument("--fences", action="store_true", help="also section 3")
    args = ap.parse_args(argv)
    programs = torch.cuda.get_device_properties(0).multi_processor_count
    need = host_bytes_for([_shape(m, bm=bm) for m in (1024, 4096, 8192, 16384) for bm in (64, 128)])
    host_buf = _host_view(need, torch.device("cuda", 0))   # kept: its memory is freed with it
    host = host_buf.cuda
    result = {}

    def dump():
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=float)
    result["tuning"] = tuning(host, programs)
    best = best_config(result["tuning"])
    result["best"], result["best_d64"] = best, best_config(result["tuning"], 64)
    print("best d=128 config", best, "d=64", result["best_d64"], flush=True)
    dump()
    result["correctness"] = correctness(host, programs, best, result["best_d64"])
    dump()
    if args.fences:
        result["fences"] = fences(host, programs, best)
        dump()
    print("\nfa-only vs cuDNN (M=8K):")
    for r in result["tuning"]:
        print(f"  d={r['d']} cfg={r['cfg']} ok={r.get('ok')} t={r.get('kernel_us', np.nan):.1f} "
              f"fa/cudnn={r.get('fa_over_cudnn', np.nan):.3f} {r.get('error', '')[:80]}")
    print("\ncorrectness (receiver side, M = 1K):")
    for r in result["correctness"]:
        print(f"  d={r['d']} N={r['sp']} rank={r['rank']} {r['variant']:>10} ok={r['ok']} "
              f"err={r.get('err', np.nan):.3g} {r.get('error', '')[:120]}")
    print("\nvariants:")
    for r in result.get("fences", []):
        print(f"  M={r['M']} bm={r['block_m']} {r['variant']:>10} ok={r.get('ok')} "
              f"t={r.get('kernel_us', np.nan):.1f} span={r.get('issue_span_us', np.nan):.2f} "
              f"p90={r.get('issue_span_p90_us', np.nan):.2f} qloop={r.get('qloop_us', np.nan):.1f} "
              f"{r.get('error', '')[:80]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
