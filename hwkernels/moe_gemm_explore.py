"""GPU exploration of the fused MoE kernel's GEMM path against cuBLAS (prints, writes JSON).

    python -m hwkernels.moe_gemm_explore --json OUT.json [--trials 20] [--budget-s 240]
           [--sections gemm-fp8,fused,gemm-bf16,blocks] [--records R.jsonl] [--batched-trials 10]

gemm-fp8 / gemm-bf16: every GEMM family of the one-GPU catalog (hidden, intermediate, its
    tiles) x rows 1024 / 4096 x both paths, each variant of VARIANTS beside the current
    settings ("base": BASE, the shipped records' kernel settings) in the same process,
    the variants' order rotated per point; each measure_path times its own cuBLAS.
fused: the FUSED_VARIANTS through the whole fused kernel (Combine into device memory, both
    schedules) on every fp8 config of the catalog and two bf16 ones: checked against the
    torch reference (err_over_tol > 1 fails), then 5 CUDA-event times.
blocks: some families with other (block_m, block_n1, block_n2) (BLOCKS).
cta-fp8 / cta-bf16 / cta-fused / batched-fp8 / batched-bf16: hwkernels.moe_gemm_sections (several
    co-resident CTAs per SM; the batched-experts diagnostic, records with --records).
Every point is checked before it is timed (moe_gemm.measure_path); a point that fails to
compile or check is reported and the rest go on. Sections stop at the budget. No records,
except the batched sections' gemm_batched records with --records.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, replace

import numpy as np

from . import moe, moe_reference

ROWS = (1024, 4096)


# the kernel as the shipped records (10d8eb7 / 4ce3734) ran it: relaxed polls, then thread
# 0's acquire; TMA descriptors made in the kernel; fp8 Linear-2 K steps of 128
BASE = {"bf16": moe.KernelConfig(block_k=64, block_k2=64, num_warps=8, num_stages=4, poll=0),
        "fp8": moe.KernelConfig(block_k=128, block_k2=128, num_warps=8, num_stages=4,
                                acc_k1=-1, acc_k2=-1, poll=0)}


def _variants() -> dict:
    """precision -> name -> KernelConfig; "base" first (BASE), then the candidates."""
    f, b = BASE["fp8"], BASE["bf16"]
    bk2 = replace(f, poll=1, block_k2=256, num_stages2=3)
    return {"fp8": {"base": f, "bk2_256": bk2, "bk2_256_hd": replace(bk2, host_desc=True),
                    "acc2_0_hd": replace(f, poll=1, acc_k2=0, host_desc=True)},
            "bf16": {"base": b, "poll": replace(b, poll=1),
                     "poll_hd": replace(b, poll=1, host_desc=True)}}


FUSED = {"fp8": ("moe1-glm-5.2-fp8-hot-4096", "moe1-qwen3-30b-fp8-balanced-4096",
                 "moe1-glm-5.2-fp8-balanced-1024", "moe1-dsv4-flash-fp8-balanced-1024",
                 "moe1-hy3-fp8-zipf-4096", "moe1-mimo-v2.5-fp8-hot-1024"),
         "bf16": ("moe1-hy3-bf16-hot-1024", "moe1-qwen3-30b-bf16-zipf-4096")}
FUSED_VARIANTS = {"fp8": ("base", "bk2_256_hd", "acc2_0_hd"), "bf16": ("base", "poll_hd")}
# blocks: (precision, hidden, intermediate, (block_m, block_n1, block_n2), variant, paths);
# at 1d01d56 the few-tile L1s with smaller tiles (64 x 128, 128 x 64, 64 x 64: none reached
# 0.70 on the 48-tile shape), now 256-wide Linear-2 tiles (promoted fp8 spills there)
BLOCKS = (("bf16", 2048, 768, (128, 128, 256), "poll_hd", ("l2",)),
          ("bf16", 4096, 1024, (128, 128, 256), "poll_hd", ("l2",)),
          ("bf16", 4096, 2048, (128, 128, 256), "poll_hd", ("l2",)),
          ("fp8", 2048, 768, (128, 128, 256), "acc2_0_hd", ("l2",)),
          ("fp8", 4096, 2048, (128, 128, 256), "acc2_0_hd", ("l2",)))


class Explore:
    def __init__(self, args, sms: int, device):
        self.args, self.sms, self.device = args, sms, device
        self.t0 = time.time()
        self.doc = {"commit": os.environ.get("XSTAGE_COMMIT", "unknown"), "sms": sms,
                    "trials": args.trials, "rows": [],
                    "variants": {p: {n: asdict(c) for n, c in v.items()}
                                 for p, v in _variants().items()}}

    def over(self) -> bool:
        return self.args.budget_s > 0 and time.time() - self.t0 > self.args.budget_s

    def add(self, row: dict):
        self.doc["rows"].append(row)
        print(json.dumps(row), flush=True)
        _write_json(self.args.json, self.doc)


def _write_json(path: str, doc: dict):
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as f:
        json.dump(doc, f)
    os.replace(f.name, path)


def _gemm_point(x: Explore, p, path: str, name: str, kc, section: str) -> dict:
    from .moe_gemm import measure_path

    s = p.shape
    row = {"section": section, "precision": s.precision, "hidden": s.hidden,
           "intermediate": s.intermediate, "m": s.tokens, "path": path, "variant": name,
           "blocks": [s.block_m, s.block_n1, s.block_n2]}
    t0 = time.time()
    try:
        r = measure_path(p, path, kc, x.args.trials)
    except Exception as e:  # noqa: BLE001 (a variant that does not compile or fit)
        return row | {"ok": False, "error": f"{type(e).__name__}: {e}"[:400]}
    row |= {k: r.get(k) for k in ("n", "k", "tiles", "ok", "max_rel_err", "kernel_rel_err",
                                   "cublas_rel_err", "resources", "ratio", "triton_tflops")}
    row["cublas_fast_accum"] = s.precision == "fp8" and (kc.acc_k1 if path == "l1" else kc.acc_k2) == 0
    for key in ("triton_us", "cublas_us"):
        if key in r:
            row[key] = r[key]["median"]
    row["wall_s"] = round(time.time() - t0, 2)
    return row


def gemm_section(x: Explore, precision: str, configs):
    from .moe_gemm import gemm_problem

    variants = _variants()[precision]
    fams = sorted({(c.shape.hidden, c.shape.intermediate, _blocks(c.shape)) for c in configs
                   if c.shape.precision == precision})
    i = 0
    for m in ROWS:
        for h, inter, blocks in fams:
            if x.over():
                print(f"gemm {precision} m{m} h{h} i{inter}: skipped (budget)", flush=True)
                continue
            p = gemm_problem(h, inter, m, precision, device=x.device, n_streams=x.sms,
                             blocks=blocks)
            names = _rotated(list(variants), i)
            i += 1
            for path in ("l1", "l2"):
                for name in names:
                    x.add(_gemm_point(x, p, path, name, variants[name], "gemm"))
            del p


def blocks_section(x: Explore):
    from .moe_gemm import gemm_problem

    for precision, h, inter, blocks, name, paths in BLOCKS:
        kc = _variants()[precision][name]
        for m in ROWS:
            if x.over():
                continue
            try:
                p = gemm_problem(h, inter, m, precision, device=x.device, n_streams=x.sms,
                                 blocks=blocks)
            except ValueError as e:
                print(f"blocks {blocks}: {e}", flush=True)
                continue
            for path in paths:
                x.add(_gemm_point(x, p, path, name, kc, "blocks"))
            del p


def fused_section(x: Explore):
    import torch

    from xsim.moe.layout import expert_layout
    from xsim.moe.routing import route
    from .moe_catalog import load_configs

    for precision, names in FUSED.items():
        for cfg in load_configs(",".join(names)):
            if x.over():
                continue
            s = cfg.shape
            data = moe_reference.make_inputs(s, cfg.seed, x.device)
            lay = expert_layout(s, route(s, cfg.routing, cfg.skew, cfg.seed))
            ref = moe_reference.reference(data, lay, s.topk)
            out = torch.empty(s.tokens, s.topk, s.hidden, dtype=torch.bfloat16, device=x.device)
            for name in FUSED_VARIANTS[precision]:
                kc = _variants()[precision][name]
                for schedule in ("wave", "interleaved"):
                    row = {"section": "fused", "config": cfg.name, "precision": precision,
                           "variant": name, "schedule": schedule}
                    x.add(fused_point(row, s, lay, schedule, x.sms, data, out, ref, kc))
            del data, ref, out


def fused_point(row: dict, s, lay, schedule: str, n_streams: int, data, out, ref, kc) -> dict:
    """One fused run on n_streams streams: checked (err_over_tol > 1 fails), then 5 CUDA-event
    times, the timed runs' output checked too; row plus the results."""
    from xsim.moe.schedule import schedule_table

    from .moe_gemm import _events_us

    tol = 2e-2 * float(ref.abs().max())
    try:
        table = schedule_table(s, lay, schedule, n_streams=n_streams)
        fused = moe.FusedMoE(s, lay, table, data, out, kc)
        out.fill_(float("nan"))
        fused.launch()
        fused.finish()
        ok, err = moe_reference.check(out, ref)
        row |= {"ok": ok, "err_over_tol": err / tol, "resources": fused.resources}
        if ok:
            us = [_events_us(fused.enqueue, fused.prepare) for _ in range(5)]
            fused.finish()
            row["kernel_us"] = float(np.median(us))
            ok, err = moe_reference.check(out, ref)     # the timed runs' output too
            row["ok"] = ok
    except Exception as e:  # noqa: BLE001 (a variant that does not compile, fit or check)
        row |= {"ok": False, "error": f"{type(e).__name__}: {e}"[:400]}
    return row


def _blocks(s):
    return (s.block_m, s.block_n1, s.block_n2)


def _rotated(names: list, i: int) -> list:
    k = i % len(names)
    return names[k:] + names[:k]


def summary(rows: list[dict]) -> dict:
    """(section, precision, variant) -> {n, n_ok, min, geomean} of the GEMM ratios, over the
    points where that variant was measured (a failed check counts in n, not in the stats)."""
    out = {}
    for r in rows:
        if r.get("section") not in ("gemm", "blocks"):
            continue
        key = (r["section"], r["precision"], r["variant"] if r["section"] == "gemm"
               else r["variant"] + "@" + "x".join(map(str, r["blocks"])))
        e = out.setdefault(key, {"n": 0, "ratios": []})
        e["n"] += 1
        if r.get("ok") and r.get("ratio"):
            e["ratios"].append(r["ratio"])
    res = {}
    for key, e in sorted(out.items()):
        v = np.asarray(e["ratios"], dtype=float)
        res[key] = {"n": e["n"], "n_ok": len(v), "min": float(v.min()) if len(v) else None,
                    "geomean": float(np.exp(np.log(v).mean())) if len(v) else None}
    return res


def print_tables(rows: list[dict]):
    points = {}
    for r in rows:
        if r.get("section") == "gemm":
            key = (r["precision"], r["path"], r["m"], r["hidden"], r["intermediate"])
            points.setdefault(key, {})[r["variant"]] = r
    for prec, names in _variants().items():
        print(f"\n{prec} GEMM ratio (cuBLAS / kernel; acc2_0 against cuBLAS fast accum)")
        print(f"{'point':28} " + " ".join(f"{n:>8}" for n in names))
        for key, by in sorted(points.items()):
            if key[0] != prec:
                continue
            any_row = next(iter(by.values()))
            label = f"{key[1]} m{key[2]} n{any_row.get('n')} k{any_row.get('k')}"
            print(f"{label:28} " + " ".join(_cell(by.get(n)) for n in names))
    print(f"\n{'section':7} {'precision':9} {'variant/blocks':14} {'n':>3} {'ok':>3} "
          f"{'min':>6} {'geomean':>8}")
    for (sec, prec, name), e in summary(rows).items():
        mn = "-" if e["min"] is None else f"{e['min']:.3f}"
        gm = "-" if e["geomean"] is None else f"{e['geomean']:.3f}"
        print(f"{sec:7} {prec:9} {name:14} {e['n']:3d} {e['n_ok']:3d} {mn:>6} {gm:>8}")
    fused = [r for r in rows if r.get("section") == "fused"]
    if fused:
        print(f"\n{'fused config':34} {'variant':8} {'schedule':11} {'ok':>3} {'err/tol':>8} "
              f"{'kernel_us':>9}")
    for r in fused:
        eot = "-" if r.get("err_over_tol") is None else f"{r['err_over_tol']:.3f}"
        ku = "-" if r.get("kernel_us") is None else f"{r['kernel_us']:.1f}"
        print(f"{r['config']:34} {r['variant']:8} {r['schedule']:11} "
              f"{'yes' if r.get('ok') else 'NO':>3} {eot:>8} {ku:>9}")


def _cell(r) -> str:
    if r is None:
        return f"{'-':>8}"
    if not r.get("ok"):
        return f"{'FAIL':>8}"
    return f"{r['ratio']:8.3f}"


def section_fn(sec: str):
    """The function (x, configs, recorder) -> None that runs section `sec` (one of SECTIONS)."""
    from . import moe_gemm_sections as more

    prec = sec.split("-", 1)[-1]
    if sec == "fused":
        return lambda x, configs, rec: fused_section(x)
    if sec == "blocks":
        return lambda x, configs, rec: blocks_section(x)
    if sec == "cta-fused":
        return lambda x, configs, rec: more.cta_fused_section(x)
    if sec.startswith("gemm-"):
        return lambda x, configs, rec: gemm_section(x, prec, configs)
    if sec.startswith("cta-"):
        return lambda x, configs, rec: more.cta_section(x, prec, configs, ROWS)
    return lambda x, configs, rec: more.batched_section(x, prec, configs, ROWS, rec)


SECTIONS = ("gemm-fp8", "gemm-bf16", "fused", "blocks", "cta-fp8", "cta-bf16", "batched-fp8",
            "batched-bf16", "cta-fused")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="hwkernels.moe_gemm_explore",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--budget-s", type=float, default=0.0)
    ap.add_argument("--sections", default=",".join(SECTIONS[:4]))
    ap.add_argument("--batched-trials", type=int, default=10)
    ap.add_argument("--records", default="", help="batched: gemm_batched records (JSONL)")
    args = ap.parse_args(argv)
    sections = [s for s in args.sections.split(",") if s]
    if set(sections) - set(SECTIONS):
        print(f'hwkernels.moe_gemm_explore: "sections" must be among {SECTIONS}',
              file=sys.stderr)
        return 2
    import torch

    from .moe_catalog import load_configs
    from .tma import set_tma_allocator

    device = torch.device("cuda", 0)
    set_tma_allocator(device)
    x = Explore(args, torch.cuda.get_device_properties(device).multi_processor_count, device)
    configs = [c for c in load_configs("") if c.shape.ep == 1 and c.name.startswith("moe1-")]
    from . import moe_gemm_sections as more

    rec = (more.batched_recorder(args.records, x.doc["commit"], x.sms) if args.records
           else None)
    for sec in sections:
        t0 = time.time()
        section_fn(sec)(x, configs, rec)
        print(f"section {sec}: {time.time() - t0:.0f} s", flush=True)
    x.doc["summary"] = {"/".join(k): v for k, v in summary(x.doc["rows"]).items()}
    _write_json(args.json, x.doc)
    print_tables(x.doc["rows"])
    more.print_cta(x.doc["rows"])
    print(f"done in {time.time() - x.t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
