"""The MoE runner's GEMM phases and its tuning (hwkernels.moe_bench drives them).

gemm / mainloop phases: for each (hidden, intermediate, precision, tile) of the configs and
each GEMM row count, the kernel's Linear-1-only and Linear-2-only paths against cuBLAS
(moe_gemm.py) and their per-tile stamps (kind "mainloop", source "gemm-only"). tune: picks
the kernel settings per precision on two shapes (the largest, and the shortest Linear-2 K).
read_settings / write_settings: the picks as JSON so separate runs share one tune.
"""

import json
import os
import tempfile
from dataclasses import asdict

import numpy as np

from . import moe
from .stats import summarize

def _kc(bk, bk2, warps, stages, acc, acc2, stages2=None, host_desc=False):
    return moe.KernelConfig(block_k=bk, block_k2=bk2, num_warps=warps, num_stages=stages,
                            acc_k1=acc, acc_k2=acc2, num_stages2=stages2, poll=1,
                            host_desc=host_desc)


# (bk1, bk2, warps, stages, acc_k1, acc_k2[, Linear-2 stages, host-made TMA descriptors]),
# every one with the acquire-load poll (poll = 1). The first of each is the pick of the GPU
# explorations (logs/h200-pcie-host-moe/explore-1d01d56, explore-84983e0, explore-4d4b402:
# every candidate beside the old settings in one run). fp8 only settings that promote Linear-1
# (the fused check needs it; block_k = 256 there was 15 % slower); acc_k -1 = an fp32 add per
# K step (promotion every block_k products), 0 = no promotion (Linear-2 since 4d4b402).
TUNE = {"bf16": [_kc(64, 64, 8, 4, 0, 0, None, True), _kc(64, 64, 8, 4, 0, 0, 6, True),
                 _kc(64, 128, 8, 4, 0, 0, 3, True)],
        "fp8": [_kc(128, 128, 8, 4, -1, 0, 4, True), _kc(128, 256, 8, 4, -1, 0, 3, True),
                _kc(128, 256, 8, 4, -1, -1, 3, True)]}


def gemm_phase(b, configs, mainloop: bool, gemm: bool):
    families = sorted({(c.shape.hidden, c.shape.intermediate, c.shape.precision, _blocks(c))
                       for c in configs})
    for m in _gemm_rows(b):
        for h, inter, prec, blocks in families:
            if b.over_budget():
                print(f"gemm {prec} m{m} h{h} i{inter}: skipped (time budget)", flush=True)
                continue
            try:
                _gemm_family(b, h, inter, prec, blocks, m, mainloop, gemm)
            except Exception:  # noqa: BLE001 (one point's failure must not end the sweep)
                import traceback

                traceback.print_exc()


def _gemm_family(b, h, inter, prec, blocks, m, mainloop: bool, gemm: bool):
    from .moe_gemm import gemm_problem, measure_path

    p = gemm_problem(h, inter, m, prec, device=b.device, n_streams=b.sms, blocks=blocks)
    kc = b.settings[prec]
    for path in ("l1", "l2"):
        if gemm:
            r = measure_path(p, path, kc, b.args.trials)
            params = {k: r[k] for k in ("precision", "m", "n", "k", "path", "tiles")}
            params |= {"sms": b.sms, "order": "grouped", "cublas_fast_accum": prec == "fp8" and not (
                kc.acc_k1 if path == "l1" else kc.acc_k2)}
            stats = {"triton_us": r["triton_us"], "cublas_us": r["cublas_us"]} if r["ok"] else None
            b.record("gemm", params | b.cfg_params(prec), stats,
                     {"ok": r["ok"], "max_rel_err": r["max_rel_err"],
                      "kernel_rel_err": r["kernel_rel_err"], "cublas_rel_err": r["cublas_rel_err"]})
            b.rows.append(("gemm", f"{prec} {path} m{m} n{r['n']} k{r['k']}", r.get("ratio"),
                           r["ok"], r.get("triton_tflops")))
        if mainloop:
            _mainloop_record(b, p, path, kc, m)


def _mainloop_record(b, p, path: str, kc, m: int):
    from .moe_gemm import mainloop_samples

    ok, t = mainloop_samples(p, path, kc)
    kind = 0 if path == "l1" else 1
    s = p.shape
    params = {"precision": s.precision, "block_m": s.block_m,
              "block_n": s.block_n1 if kind == 0 else s.block_n2,
              "k_dim": s.hidden if kind == 0 else s.intermediate, "kind": path, "m": m,
              "hidden": s.hidden, "intermediate": s.intermediate,   # the weights' L2 footprint
              "source": "gemm-only", "order": "grouped"} | b.cfg_params(s.precision)
    stats = None if not ok else {name: summarize(t.of(kind, name)).to_dict()
                                 for name in ("mainloop_us", "wait_us", "store_us", "signal_us")}
    b.record("mainloop", params, stats, {"ok": ok})


def _blocks(c):
    return (c.shape.block_m, c.shape.block_n1, c.shape.block_n2)


def _gemm_rows(b) -> list[int]:
    return [int(v) for v in b.args.gemm_m.split(",") if v]


def tune(b, configs):
    """Pick block_k/warps/stages/acc_k per precision: best geomean GEMM ratio over both
    paths of two shapes (the largest, and the shortest Linear-2 K)."""
    from .moe_gemm import gemm_problem, measure_path

    for prec in sorted({c.shape.precision for c in configs}):
        mine = [c.shape for c in configs if c.shape.precision == prec]
        big = max(mine, key=lambda s: (s.hidden, s.intermediate))
        short = min(mine, key=lambda s: (s.intermediate, s.hidden))
        picks = {(s.hidden, s.intermediate, _blocks_of(s)) for s in (big, short)}
        probs = [gemm_problem(h, i, max(_gemm_rows(b)), prec, device=b.device,
                              n_streams=b.sms, blocks=bl) for h, i, bl in sorted(picks)]
        best = None
        for kc in TUNE[prec]:
            label = _label(kc)
            try:
                rs = [measure_path(p, path, kc, 10) for p in probs for path in ("l1", "l2")]
            except Exception as e:   # noqa: BLE001 (a setting that does not compile)
                print(f"tune {prec} {label}: {type(e).__name__}: {str(e)[:300]}", flush=True)
                continue
            if not all(r["ok"] for r in rs):
                print(f"tune {prec} {label}: check failed "
                      f"{[round(r['max_rel_err'], 4) for r in rs]}", flush=True)
                continue
            score = float(np.exp(np.mean(np.log([r["ratio"] for r in rs]))))
            print(f"tune {prec} {label}: "
                  + " ".join(f"{r['path']}(k{r['k']}) {r['ratio']:.3f}" for r in rs)
                  + f" geomean {score:.3f} res={rs[0]['resources']}/{rs[1]['resources']}",
                  flush=True)
            if best is None or score > best[0]:
                best = (score, kc)
        if best is not None:
            b.settings[prec] = best[1]
        del probs


def _label(kc) -> str:
    return (f"bk={kc.block_k}/{kc.k2} warps={kc.num_warps} stages={kc.num_stages}/{kc.stages2} "
            f"acc_k={kc.acc_k1}/{kc.acc_k2} tma={int(kc.tma)} poll={kc.poll} "
            f"host_desc={int(kc.host_desc)}")


def _blocks_of(s):
    return (s.block_m, s.block_n1, s.block_n2)


def write_settings(path: str, settings: dict):
    """Write the settings (precision -> KernelConfig) as JSON, atomically."""
    keep = ("block_k", "block_k2", "num_warps", "num_stages", "tma", "acc_k1", "acc_k2",
            "num_stages2", "poll", "host_desc")
    doc = {k: {f: v for f, v in asdict(c).items() if f in keep} for k, c in settings.items()}
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as f:
        json.dump(doc, f)
    os.replace(f.name, path)


def read_settings(path: str) -> dict:
    """precision -> KernelConfig from a write_settings file."""
    with open(path) as f:
        return {k: moe.KernelConfig(**v) for k, v in json.load(f).items()}
