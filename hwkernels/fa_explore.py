"""GPU exploration for issue 11's two open targets (prints, writes JSON; no records).

    python -m hwkernels.fa_explore --json OUT.json [--budget-s 200] [--sections pace,fa]

chk:  fused-paced at M = 1K on other shapes (rank 2 of N = 4, d = 64 with N = 2, b_m = 64);
pace: fa-only, fused and fused-paced (pace chunks, spread or one per KV step, tile order) at a
      few M with the default configuration: kernel time, per-tile Q-loop and store spans.
fa:   FA-only over candidate configurations (b_m, b_n, warps, stages, programs per SM, flatten,
      warp specialization, software-pipelined Q-loop) beside torch's cuDNN SDPA in the same run.
var:  every kernel variant (fa-only, fused, fused-paced, cc-asm, cc-atomic) with each of a few
      FA_CONFIGS entries at a few M: receiver-side checks, kernel time, per-tile Q-loop.
Every point is checked on the receiver side before it is timed (harness.measure); a point
that fails to compile or check is reported and the rest go on. Sections stop at the budget.
"""

import argparse
import json
import sys
import time

import numpy as np

from . import fa_sass
from .fa import FAShape
from .fa_bench import _host_view, host_bytes_for, measure_variant, slots_for
from .fa_split import split_plan
from .fa_variants import Case, KernelConfig

# name: (block_m, block_n, warps, stages, tma, CTAs per SM (0: one program per tile), flatten, ws,
#        swp: the Q-loop software-pipelined by one KV step, fa_qloop._qloop_swp)
FA_CONFIGS = {
    "base": (128, 128, 8, 3, True, 1, False, False, False),
    "flat": (128, 128, 8, 3, True, 1, True, False, False),
    "ws": (128, 128, 8, 3, True, 1, False, True, False),
    "bm64x2": (64, 64, 4, 3, True, 2, False, False, False),
    "bm64x2s2": (64, 64, 4, 2, True, 2, False, False, False),
    "bn64x2": (128, 64, 8, 2, True, 2, False, False, False),
    "grid": (128, 128, 8, 3, True, 0, False, False, False),
    "flat2": (128, 128, 8, 2, True, 1, True, False, False),
    "bm64n128x2s1": (64, 128, 4, 1, True, 2, False, False, False),
    "bm64x3s1": (64, 64, 4, 1, True, 3, False, False, False),
    "bm64x2s3w8": (64, 64, 8, 3, True, 2, False, False, False),
    "wsbm64x2": (64, 64, 4, 3, True, 2, False, True, False),
    "base2": (128, 128, 8, 2, True, 1, False, False, False),
    # software-pipelined Q-loop (one more V buffer: at b_n = 128, 3 stages = 262 KB; and P of
    # the previous step held through the softmax: at b_m = b_n = 128, 255 registers + spills)
    "swp2": (128, 128, 8, 2, True, 1, False, False, True),
    "swpn64s3": (128, 64, 8, 3, True, 1, False, False, True),
    "swpn64s4": (128, 64, 8, 4, True, 1, False, False, True),
    "swp64x2": (64, 64, 4, 2, True, 2, False, False, True),
    "swp64x2w8": (64, 64, 8, 2, True, 2, False, False, True),
}
# "<FA_CONFIGS entry>[-l][-a][-e<k>][-s]": KernelConfig extras on that entry: -l the softmax's row
# sums as P @ ones on the tensor cores (lsum), -a its rescale first (early), -e<k> exp2 of k of
# every 8 elements on the FMA pipe (emu, fa_exp2), -s the last partial wave split along KV
# (split, fa_split; FA-only only)
FA_EXTRA = {f"{base}{'-l' * ls}{'-a' * a}{f'-e{k}' * bool(k)}{'-s' * sp}":
            (base, {"lsum": ls, "early": a, "emu": k, "split": sp})
            for base in ("base", "bm64x2") for ls in (False, True) for a in (False, True)
            for k in (0, 1, 2, 3, 4) for sp in (False, True) if ls or a or k or sp}
# "base" runs KernelConfig's defaults (the shipped kernel, exp2 1 of 8 on the FMA pipe);
# "<entry>-e0": every exp2 on MUFU (the kernel shipped before it)
FA_EXTRA.update({f"{base}-e0": (base, {"lsum": False, "early": False, "emu": 0, "split": False})
                 for base in ("base", "bm64x2")})
# "<entry>-q<k>": the next tile's Q (k = 2: and its first K, V) prefetched into L2 at each tile
# start (qpf, without qreg); "-r": the next tile's Q loaded into registers during the epilogue
# (qreg, shipped since call faspeed2-1: the other names get it from KernelConfig); "-r0": the
# kernel shipped before it (run 3)
FA_EXTRA.update({f"{base}{'-r' * r}{f'-q{k}' * bool(k)}":
                 (base, {"lsum": False, "early": False, "emu": 1, "split": False, "qpf": k,
                         "qreg": r})
                 for base in ("base", "bm64x2") for r in (False, True) for k in (0, 1, 2)
                 if r or k})
FA_EXTRA.update({f"{base}-r0": (base, {"lsum": False, "early": False, "emu": 1, "split": False,
                                       "qpf": 0, "qreg": False}) for base in ("base", "bm64x2")})


def fa_config(name: str) -> tuple:
    """(FA_CONFIGS tuple, KernelConfig extras) of a FA_CONFIGS or FA_EXTRA name."""
    if name in FA_EXTRA:
        base, extra = FA_EXTRA[name]
        return FA_CONFIGS[base], dict(extra)
    return FA_CONFIGS[name], {}


# name: (pace, spread, order, branch)
PACED = {"p1": (1, True, "remote-first", True), "p2": (2, True, "remote-first", True),
         "p4": (4, True, "remote-first", True), "p8": (8, True, "remote-first", True),
         "p16": (16, True, "remote-first", True), "p8def": (8, True, "default", True),
         "p8con": (8, False, "remote-first", True), "p8m": (8, True, "remote-first", False),
         "p16m": (16, True, "remote-first", False)}


_SASS: dict = {}   # id(compiled kernel) -> (kernel, fa_sass.inspect_cubin of it)


def _shape(m, bm=128, bn=128, tokens=4096):
    return FAShape(batch=max(1, tokens // m), heads=32, seq_len=m, head_dim=128, sp=4,
                   block_m=bm, block_n=bn)


def _point(shape, cfg, host, programs, variant, repeats, instrument=True) -> dict:
    case = Case(shape, cfg, host, slots_for(shape), programs)
    t0 = time.time()
    try:
        m, _, _ = measure_variant(case, variant, repeats, instrument)
    except Exception as exc:  # noqa: BLE001 - report and go on
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:400]}
    res = {"ok": m.ok, "err": m.max_abs_err, "wall_s": round(time.time() - t0, 1)}
    k = case.compiled
    if k is not None:
        res.update(n_regs=getattr(k, "n_regs", None), n_spills=getattr(k, "n_spills", None),
                   shared=getattr(getattr(k, "metadata", None), "shared", None))
        try:   # the SASS of the kernel that ran: softmax under P V? wgmma A registers held?
            if id(k) not in _SASS:
                _SASS[id(k)] = (k, fa_sass.inspect_cubin(k.asm["cubin"]))
            res.update(_SASS[id(k)][1])
        except Exception as exc:  # noqa: BLE001 - reported, the point stands
            res["sass_error"] = f"{type(exc).__name__}: {exc}"[:200]
    if m.ok:
        for name, s in m.stats.items():
            res[name] = s.median
            if name in ("issue_span_us", "qloop_us"):
                res[name + "_p90"] = s.p90
                res[name + "_max"] = s.max
    return res


def _paced_cfg(w, st, tma, name, swp=False, **extra) -> KernelConfig:
    pace, spread, order, branch = PACED[name]
    return KernelConfig(w, st, tma, pace=pace, pace_spread=spread, pace_order=order,
                        pace_branch=branch, swp=swp, **extra)


def pace_section(host, sms, out, deadline, ms=(1024, 4096, 8192, 16384), fa_cfg="base",
                 paced=tuple(PACED), baselines=True):
    bm, bn, w, st, tma, per_sm, _, _, swp = FA_CONFIGS[fa_cfg]
    base = [("fa-only", "fa-only", KernelConfig(w, st, tma, swp=swp)),
            ("fused", "fused", KernelConfig(w, st, tma, swp=swp))] if baselines else []
    for m in ms:
        shape = _shape(m, bm, bn)
        for name, variant, cfg in base + [(n, "fused-paced", _paced_cfg(w, st, tma, n, swp))
                                          for n in paced]:
            if time.time() > deadline:
                return
            r = {"section": "pace", "M": m, "name": name, "fa_cfg": fa_cfg,
                 **_point(shape, cfg, host, per_sm * sms, variant, repeats=4)}
            out.append(r)
            print(json.dumps(r, default=float), flush=True)


def check_section(host, sms, out, deadline, ms=(1024,)):
    """fused-paced on other shapes (rank 2 of N = 4; d = 64, N = 2): receiver side, timed."""
    for d, sp, rank, bm in ((128, 4, 2, 128), (64, 2, 0, 128), (128, 4, 1, 64)):
        for name in PACED:
            if time.time() > deadline or name == "p8def" or (d, bm) != (128, 128) and name != "p8":
                continue
            shape = FAShape(batch=2, heads=8, seq_len=ms[0], head_dim=d, sp=sp, rank=rank,
                            block_m=bm, block_n=bm)
            cfg = _paced_cfg(8 if bm == 128 else 4, 2, True, name)
            r = {"section": "chk", "M": ms[0], "name": f"d{d}N{sp}r{rank}bm{bm}{name}",
                 **_point(shape, cfg, host, sms, "fused-paced", 2, False)}
            out.append(r)
            print(json.dumps(r, default=float), flush=True)


def fa_section(host, sms, out, deadline, ms=(1024, 3072, 8192), names=tuple(FA_CONFIGS)):
    for m in ms:
        if time.time() > deadline:
            return
        r = {"section": "fa", "M": m, "name": "cudnn",
             **_point(_shape(m), KernelConfig(), host, sms, "sdpa-cudnn", 4, False)}
        out.append(r)
        print(json.dumps(r, default=float), flush=True)
        for name in names:
            (bm, bn, w, st, tma, per_sm, flat, ws, swp), extra = fa_config(name)
            if time.time() > deadline:
                return
            shape = _shape(m, bm, bn)
            programs = shape.n_tiles if per_sm == 0 else per_sm * sms
            if extra.get("split") and split_plan(shape.n_tiles, programs, m // bn)[1] == 1:
                continue            # no partial wave to split: the same kernel as without -s
            cfg = KernelConfig(w, st, tma, flatten=flat, ws=ws, swp=swp, **extra)
            r = {"section": "fa", "M": m, "name": name, "cfg": list(fa_config(name)[0]),
                 "extra": extra,
                 **_point(shape, cfg, host, programs, "fa-only", 4, False)}
            out.append(r)
            print(json.dumps(r, default=float), flush=True)


VAR_VARIANTS = ("fa-only", "fused", "fused-paced", "cc-asm", "cc-atomic")


def var_section(host, sms, out, deadline, ms=(1024, 8192), names=("base", "swp2"),
                variants=VAR_VARIANTS, paced="p8"):
    """Every kernel variant with each FA_CONFIGS entry in `names` (fused-paced: PACED[paced]),
    the entries side by side at each M: receiver-side checks, kernel time, per-tile Q-loop."""
    for m in ms:
        for variant in variants:
            for name in names:
                if time.time() > deadline:
                    return
                (bm, bn, w, st, tma, per_sm, flat, ws, swp), extra = fa_config(name)
                cfg = (_paced_cfg(w, st, tma, paced, swp, **extra)
                       if variant == "fused-paced"
                       else KernelConfig(w, st, tma, flatten=flat, ws=ws, swp=swp, **extra))
                r = {"section": "var", "M": m, "name": f"{name}:{variant}", "fa_cfg": name,
                     **_point(_shape(m, bm, bn), cfg, host, per_sm * sms, variant, repeats=4)}
                out.append(r)
                print(json.dumps(r, default=float), flush=True)


def summary(rows) -> str:
    lines = []
    cud = {r["M"]: r.get("kernel_us") for r in rows if r["name"] == "cudnn" and r.get("ok")}
    for r in rows:
        t = r.get("kernel_us", np.nan)
        extra = ""
        if r["section"] == "fa" and r["name"] != "cudnn" and cud.get(r["M"]) and r.get("ok"):
            extra = f" cudnn/ours={cud[r['M']] / t:.3f}"
        if r["section"] in ("pace", "var"):
            extra = (f" qloop={r.get('qloop_us', np.nan):.1f} p90={r.get('qloop_us_p90', np.nan):.1f}"
                     f" span={r.get('issue_span_us', np.nan):.2f} p90={r.get('issue_span_us_p90', np.nan):.2f}")
        lines.append(f"{r['section']:>4} {r.get('fa_cfg', '')} M={r['M']:>6} {r['name']:>9} ok={r.get('ok')} t={t:9.1f}"
                     f" regs={r.get('n_regs')} spills={r.get('n_spills')} smem={r.get('shared')}"
                     f" ovl={r.get('mufu_under_pv')} haz={r.get('rs_hazards')}"
                     f"{extra} {r.get('error', '')[:160]}")
    return "\n".join(lines)


def ratios(rows) -> dict:
    """{config name: {M: cuDNN time / ours}} of section fa (points that passed)."""
    cud = {r["M"]: r["kernel_us"] for r in rows if r["section"] == "fa" and r["name"] == "cudnn"
           and r.get("ok")}
    out: dict = {}
    for r in rows:
        if r["section"] == "fa" and r["name"] != "cudnn" and r.get("ok") and r["M"] in cud:
            out.setdefault(r["name"], {})[r["M"]] = cud[r["M"]] / r["kernel_us"]
    return out


def ratio_table(rows) -> str:
    """One line per config: cuDNN / ours at every M of section fa, then the minimum."""
    rat = ratios(rows)
    ms = sorted({m for v in rat.values() for m in v})
    lines = [f"{'config':>16} " + " ".join(f"{m:>6}" for m in ms) + "    min"]
    for name, v in rat.items():
        cells = " ".join(f"{v[m]:6.3f}" if m in v else f"{'-':>6}" for m in ms)
        lines.append(f"{name:>16} {cells} {min(v.values()):6.3f}")
    return "\n".join(lines)


def auto_var_configs(rows, n: int = 2, family: str = "base") -> list:
    """`family` and its n unsplit FA_EXTRA configs with the highest minimum cuDNN / ours over the
    M every one of them passed (section var's "auto")."""
    rat = {k: v for k, v in ratios(rows).items()
           if k in FA_EXTRA and FA_EXTRA[k][0] == family and not FA_EXTRA[k][1]["split"]}
    full = set(ratios(rows).get(family, {}))
    ok = [k for k, v in rat.items() if set(v) >= full]
    return [family] + sorted(ok, key=lambda k: -min(rat[k][m] for m in full))[:n]


def main(argv=None) -> int:
    import torch

    ap = argparse.ArgumentParser(prog="hwkernels.fa_explore")
    ap.add_argument("--json", required=True)
    ap.add_argument("--budget-s", type=float, default=200.0)
    ap.add_argument("--sections", default="pace:110,fa:85,chk:20",
                    help="comma-separated section:seconds, run in this order")
    ap.add_argument("--pace-ms", default="1024,4096,8192,16384")
    ap.add_argument("--fa-ms", default="1024,3072,8192")
    ap.add_argument("--fa-configs", default=",".join(FA_CONFIGS),
                    help="names of FA_CONFIGS or FA_EXTRA")
    ap.add_argument("--var-ms", default="1024,8192")
    ap.add_argument("--var-configs", default="base,swp2",
                    help="names of FA_CONFIGS or FA_EXTRA (section var); auto: base and the two "
                         "FA_EXTRA configs of section fa with the highest minimum cuDNN / ours")
    ap.add_argument("--pace-config", default="base", help="the FA_CONFIGS entry of section pace")
    ap.add_argument("--paced", default=",".join(PACED), help="names of PACED for section pace")
    ap.add_argument("--no-baselines", action="store_true", help="section pace without fa-only, fused")
    ap.add_argument("--pick", default="", metavar="ARGS.txt",
                    help="write the fa_bench options of the fastest paced entry (summed over M)")
    args = ap.parse_args(argv)
    t_end = time.time() + args.budget_s
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    pace_ms = [int(x) for x in args.pace_ms.split(",") if x]
    fa_ms = [int(x) for x in args.fa_ms.split(",") if x]
    var_ms = [int(x) for x in args.var_ms.split(",") if x]
    need = host_bytes_for([_shape(m, bm) for m in pace_ms + fa_ms + var_ms for bm in (64, 128)])
    host_buf = _host_view(need, torch.device("cuda", 0))    # keep it: freed with the object
    host = host_buf.cuda
    rows: list = []
    try:
        for item in args.sections.split(","):
            sec, _, secs = item.partition(":")
            deadline = min(t_end, time.time() + float(secs or args.budget_s))
            if sec == "fa":
                fa_section(host, sms, rows, deadline, fa_ms, args.fa_configs.split(","))
            elif sec == "var":
                names = (auto_var_configs(rows) if args.var_configs == "auto"
                         else args.var_configs.split(","))
                print(f"var configs: {names}", flush=True)
                var_section(host, sms, rows, deadline, var_ms, names)
            elif sec == "pace":
                pace_section(host, sms, rows, deadline, pace_ms, args.pace_config,
                             args.paced.split(","), not args.no_baselines)
            else:
                check_section(host, sms, rows, deadline, pace_ms)
    finally:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, default=float)
        print(summary(rows))
        print(ratio_table(rows))
        if args.pick:
            pick(rows, args.pick)
    return 0


def pick(rows, path) -> str:
    """fa_bench options of the paced entry with the smallest summed kernel time over the M that
    every entry passed (default options if none passed)."""
    ok = [r for r in rows if r["section"] == "pace" and r["name"] in PACED and r.get("ok")]
    ms = {r["M"] for r in ok}
    names = {r["name"] for r in ok}
    full = [n for n in names if {r["M"] for r in ok if r["name"] == n} == ms]
    opts = ""
    if full:
        best = min(full, key=lambda n: sum(r["kernel_us"] for r in ok if r["name"] == n))
        pace, spread, order, branch = PACED[best]
        opts = (f"--pace {pace} --pace-order {order}" + ("" if spread else " --pace-consecutive")
                + ("" if branch else " --pace-masked"))
        print(f"pick: {best} -> {opts}")
    with open(path, "w") as f:
        f.write(opts + "\n")
    return opts


if __name__ == "__main__":
    sys.exit(main())
