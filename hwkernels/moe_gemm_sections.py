"""Two more sections of hwkernels.moe_gemm_explore (GPU only; tables and records).

cta: the GEMM path on one expert with several co-resident CTAs per SM (grid = c x SMs
    streams, smaller per-CTA tiles or fewer warps; FusedMoE checks the driver's occupancy
    for c CTAs per SM before launching), each candidate of CTA_VARIANTS beside "now" (the
    shipped settings, SETTINGS, the catalog's tiles, one CTA per SM) on every catalog family
    x rows x the candidate's paths; each point checked, then timed against its own cuBLAS.
cta-fused: the whole fused kernel (Combine into device memory, both schedules) with the
    FUSED_CTA candidates' tiles, warps and c x SMs streams beside "now" on a few catalog
    configs: checked against the torch reference (err_over_tol > 1 fails), then 5 times.
batched: an additional diagnostic beside the single-expert ratios (never replacing them):
    the same per-expert shapes (m rows per expert) batched over E of the config's experts in
    one launch of our kernel (the shipped settings and tiles) against batched cuBLAS (bf16
    torch.bmm, fp8 a loop of E torch._scaled_mm; moe_gemm). E = batch_experts(...). Records
    of kind "gemm_batched" when a records file is given.
"""

from dataclasses import replace

from . import moe_reference
from .moe_bench import SETTINGS

BATCH_ROWS = 32768            # E x m rows per batched launch at most
BATCH_WEIGHT_ELEMS = 1 << 30  # E x 3 x H x I weight elements at most (2 GiB in bf16)


def batch_experts(experts_local: int, m: int, hidden: int, intermediate: int) -> int:
    """E of the batched diagnostic: the config's local experts, capped by rows and weights."""
    return max(1, min(experts_local, BATCH_ROWS // m,
                      BATCH_WEIGHT_ELEMS // (3 * hidden * intermediate)))


def cta_variants() -> dict:
    """precision -> name -> (blocks or None = the catalog's, KernelConfig, CTAs per SM, paths)."""
    out = {}
    for prec, kc in SETTINGS.items():
        v = {"now": (None, kc, 1, ("l1", "l2")),
             "c2_64x64_w4": ((64, 64, 128), replace(kc, num_warps=4), 2, ("l1",)),
             "c1_64x64_w4": ((64, 64, 128), replace(kc, num_warps=4), 1, ("l1",)),
             "c2_128x64_r128": ((128, 64, 128), replace(kc, maxnreg=128, num_stages=3,
                                                         num_stages2=3), 2, ("l1",)),
             "c2_l2_w4": (None, replace(kc, num_warps=4, num_stages=1, num_stages2=3), 2,
                          ("l2",))}
        if prec == "bf16":
            v["c2_128x64_w4"] = ((128, 64, 128), replace(kc, num_warps=4, num_stages=3,
                                                          num_stages2=3), 2, ("l1",))
        out[prec] = v
    return out


FUSED_CTA = {"fp8": ("moe1-qwen3-30b-fp8-balanced-4096", "moe1-glm-5.2-fp8-hot-4096",
                     "moe1-mimo-v2.5-fp8-hot-1024"),
             "bf16": ("moe1-qwen3-30b-bf16-zipf-4096", "moe1-hy3-bf16-hot-1024")}
FUSED_CTA_VARIANTS = ("now", "c2_64x64_w4", "c2_128x64_r128", "c2_128x64_w4")


def cta_fused_section(x):
    import torch

    from xsim.moe.layout import expert_layout
    from xsim.moe.routing import route

    from .moe_catalog import load_configs
    from .moe_gemm_explore import fused_point

    for precision, names in FUSED_CTA.items():
        variants = cta_variants()[precision]
        for cfg in load_configs(",".join(names)):
            if x.over():
                continue
            s0 = cfg.shape
            data = moe_reference.make_inputs(s0, cfg.seed, x.device)
            routing = route(s0, cfg.routing, cfg.skew, cfg.seed)
            ref = moe_reference.reference(data, expert_layout(s0, routing), s0.topk)
            out = torch.empty(s0.tokens, s0.topk, s0.hidden, dtype=torch.bfloat16,
                              device=x.device)
            for name in (n for n in FUSED_CTA_VARIANTS if n in variants):
                bl, kc, per_sm, _ = variants[name]
                s = s0 if bl is None else replace(s0, block_m=bl[0], block_n1=bl[1],
                                                  block_n2=bl[2])
                lay = expert_layout(s, routing)
                for schedule in ("wave", "interleaved"):
                    row = {"section": "cta-fused", "config": cfg.name, "precision": precision,
                           "variant": name, "schedule": schedule, "blocks": [s.block_m,
                           s.block_n1, s.block_n2], "streams": per_sm * x.sms}
                    x.add(fused_point(row, s, lay, schedule, per_sm * x.sms, data, out, ref,
                                      kc))
            del data, ref, out


def _families(configs, precision):
    fams = {}
    for c in configs:
        s = c.shape
        if s.precision == precision:
            key = (s.hidden, s.intermediate, (s.block_m, s.block_n1, s.block_n2))
            fams[key] = max(fams.get(key, 0), s.experts_local)
    return sorted(fams.items())


def cta_section(x, precision: str, configs, rows):
    from .moe_gemm import gemm_problem
    from .moe_gemm_explore import _gemm_point, _rotated

    variants = cta_variants()[precision]
    names = [n for n in variants if n != "now"]
    i = 0
    for m in rows:
        for (h, inter, blocks), _ in _families(configs, precision):
            if x.over():
                print(f"cta {precision} m{m} h{h} i{inter}: skipped (budget)", flush=True)
                continue
            for name in ["now"] + _rotated(names, i):
                bl, kc, per_sm, paths = variants[name]
                try:
                    p = gemm_problem(h, inter, m, precision, device=x.device,
                                     n_streams=per_sm * x.sms, blocks=bl or blocks)
                except ValueError as e:
                    print(f"cta {name} h{h} i{inter} m{m}: {e}", flush=True)
                    continue
                for path in paths:
                    row = _gemm_point(x, p, path, name, kc, "cta")
                    x.add(row | {"ctas_per_sm_wanted": per_sm})
                del p
            i += 1


def batched_section(x, precision: str, configs, rows, recorder=None):
    from .moe_gemm import gemm_problem, measure_path

    kc = SETTINGS[precision]
    for m in rows:
        for (h, inter, blocks), e_local in _families(configs, precision):
            if x.over():
                print(f"batched {precision} m{m} h{h} i{inter}: skipped (budget)", flush=True)
                continue
            e_n = batch_experts(e_local, m, h, inter)
            row = {"section": "batched", "precision": precision, "hidden": h,
                   "intermediate": inter, "m": m, "experts": e_n, "config_experts": e_local,
                   "variant": "now", "blocks": list(blocks)}
            try:
                p = gemm_problem(h, inter, m, precision, device=x.device, n_streams=x.sms,
                                 blocks=blocks, experts=e_n)
            except Exception as e:  # noqa: BLE001 (out of memory: report, go on)
                x.add(row | {"ok": False, "error": f"{type(e).__name__}: {e}"[:300]})
                continue
            for path in ("l1", "l2"):
                try:
                    r = measure_path(p, path, kc, x.args.batched_trials)
                except Exception as e:  # noqa: BLE001
                    x.add(row | {"path": path, "ok": False,
                                 "error": f"{type(e).__name__}: {e}"[:300]})
                    continue
                fast = precision == "fp8" and (kc.acc_k1 if path == "l1" else kc.acc_k2) == 0
                cub = "torch.bmm" if precision == "bf16" else f"{e_n} x torch._scaled_mm"
                res = row | {k: r.get(k) for k in ("path", "n", "k", "tiles", "ok", "ratio",
                                                   "max_rel_err", "triton_tflops")}
                res |= {"cublas": cub, "cublas_fast_accum": fast,
                        "triton_us": r.get("triton_us", {}).get("median"),
                        "cublas_us": r.get("cublas_us", {}).get("median")}
                x.add(res)
                if recorder is not None:
                    recorder(r, res, kc)
            del p


def batched_recorder(path: str, commit: str, sms: int):
    """A function writing one "gemm_batched" record (kind, params, stats, check) per point."""
    from . import records
    from .platform_info import platform, smi_sm_clock_mhz

    plat = {}
    dirty = records.run_commit()[1]

    def record(r, row, kc):
        if not plat:
            plat.update(platform(1, smi_sm_clock_mhz(), 0, 1, destination="host"))
        params = {k: row[k] for k in ("precision", "m", "n", "k", "path", "tiles", "experts",
                                      "config_experts", "hidden", "intermediate", "cublas",
                                      "cublas_fast_accum")}
        params |= {"sms": sms, "order": "grouped", "m_per_expert": row["m"],
                   "block_k": kc.block_k, "block_k2": kc.k2, "num_warps": kc.num_warps,
                   "num_stages": kc.num_stages, "num_stages2": kc.stages2,
                   "acc_k1": kc.acc_k1, "acc_k2": kc.acc_k2, "host_desc": kc.host_desc}
        stats = {"triton_us": r["triton_us"], "cublas_us": r["cublas_us"]} if r["ok"] else None
        check = {"ok": r["ok"], "max_rel_err": r["max_rel_err"],
                 "kernel_rel_err": r["kernel_rel_err"], "cublas_rel_err": r["cublas_rel_err"]}
        records.append_record(path, records.make_record("moe", "gemm_batched", params, stats,
                                                        check, plat, commit, dirty))

    return record


def print_cta(rows: list[dict]):
    """Per point: "now" and each candidate's ratio (tiles, CTAs per SM got)."""
    pts = {}
    for r in rows:
        if r.get("section") == "cta":
            pts.setdefault((r["precision"], r["path"], r["m"], r["hidden"], r["intermediate"]),
                           {})[r["variant"]] = r
    for key, by in sorted(pts.items()):
        cells = []
        for name, r in by.items():
            if not r.get("ok"):
                cells.append(f"{name} FAIL({str(r.get('error', 'check'))[:40]})")
            else:
                cps = (r.get("resources") or {}).get("ctas_per_sm")
                cells.append(f"{name} {r['ratio']:.3f}({r['tiles']},{cps})")
        print(f"cta {' '.join(map(str, key))}: " + "  ".join(cells), flush=True)
    for r in rows:
        if r.get("section") == "cta-fused":
            eot = "-" if r.get("err_over_tol") is None else f"{r['err_over_tol']:.3f}"
            print(f"cta-fused {r['config']} {r['variant']} {r['schedule']}: "
                  f"{'ok' if r.get('ok') else 'NO ' + str(r.get('error', ''))[:80]} "
                  f"err/tol {eot} kernel_us {r.get('kernel_us')} res {r.get('resources')}",
                  flush=True)
        if r.get("section") == "batched":
            ratio = "FAIL" if not r.get("ok") else f"{r['ratio']:.3f}"
            print(f"batched {r['precision']} {r.get('path')} m{r['m']} h{r['hidden']} "
                  f"i{r['intermediate']} E{r['experts']}/{r['config_experts']}: {ratio} "
                  f"tiles {r.get('tiles')} ours {r.get('triton_us')} cublas {r.get('cublas_us')}",
                  flush=True)
