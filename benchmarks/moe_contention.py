"""Schedule-dependent mainloops: the MoE local control against a shared-HBM compute model.

Without the link (the ``kernel_local`` records: the fused kernel with its Combine into local
HBM) the DES mispredicts the schedules' speedup by up to 0.085, and the measured mainloops
depend on the schedule. This compares, for the 18 one-GPU configs x both schedules:

- ``DES``: today's compute model (per-shape pooled mean, measured spread) in the DES without
  the link (``xsim.report.moe.without_link``), as ``xsim report --experiment moe`` runs it;
- ``PS``: the processor-sharing simulator alone (:mod:`xsim.moe.contention`): GEMM-only
  compute times, 4.3 TB/s, nothing else from the fused records but the fixed per-tile costs;
- ``PS+DES``: ``compute = contention`` (:mod:`xsim.moe.contention_model`): the pre-pass's
  per-tile mainloops, anchored to the pooled per-shape means, in the DES (``contention_detail
  = kind``: only its per-schedule means, times the measured spread);

then the same over the host link, and the sensitivity to HBM bandwidth, sharing rule,
spread and spread seed.

    PYTHONPATH=. /work/venv/bin/python benchmarks/moe_contention.py [--out benchmarks/results] [--quick]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from provenance import commit_note  # benchmarks/ is the script's folder

from calibration.records import load_records
from xsim.fileio import atomic_write
from xsim.builders import moe as builder
from xsim.moe import catalog
from xsim.moe.contention_model import HBM_TBPS, FixedCosts, calibrate_compute_us, compute_key, local_mainloops
from xsim.moe.tiles import L1, L2
from xsim.report import moe as rep
from xsim.spread import tile_factors

RECORDS = "calibration/records/h200-pcie-host-moe.jsonl"
S = rep.SCHEDULES


def load():
    rs = load_records([RECORDS])
    return ([r.data for r in rs.select("moe", "mainloop")], rep._measured(rs.select("moe", "kernel")),
            rep._measured(rs.select("moe", "kernel_local")))


def measured_means(records: list[dict]) -> dict:
    """(config, schedule) -> fused-local (L1, L2) mean mainloop us (the records' own means)."""
    out = {}
    for r in records:
        p = r["params"]
        if p.get("source") == "fused-local":
            out.setdefault((p["config"], p["schedule"]), {})[p["kind"]] = r["stats"]["mainloop_us"]["mean"]
    return {k: (v.get("l1", np.nan), v.get("l2", np.nan)) for k, v in out.items()}


def ps_alone(cfg, calib: dict) -> dict:
    """The processor-sharing simulator's own local run per schedule: (kernel, L1 mean, L2 mean, s)."""
    costs = FixedCosts(cfg.wait_overhead_us["l1"], cfg.wait_overhead_us["l2"], cfg.l1_epilogue_us,
                       cfg.l2_epilogue_us, cfg.prologue_us)
    out = {}
    for s in S:
        table = cfg.table(s)
        factors = tile_factors(table.tiles, {L1: cfg.mainloop_cv["l1"], L2: cfg.mainloop_cv["l2"]}, 0)
        t0 = time.perf_counter()
        r = local_mainloops(table, cfg.shape, cfg.layout.mblock_valid_rows(), calib[compute_key(cfg.shape, "l1")],
                            calib[compute_key(cfg.shape, "l2")], costs, HBM_TBPS, factors, cfg._l2_issue_us(table),
                            cfg.params["hbm_share"])
        kind = table.tiles[:, 0]
        out[s] = (r.makespan_us, r.mainloop_us[kind == L1].mean(), r.mainloop_us[kind == L2].mean(),
                  time.perf_counter() - t0)
    return out


def _late_l1(table, result) -> tuple[float, float]:
    """(mean mainloop of each m-block's last-ending L1 tile, mean of all L1 tiles)."""
    kind, m = table.tiles[:, 0], table.tiles[:, 2]
    l1 = np.nonzero(kind == L1)[0]
    order = l1[np.lexsort((result.mainloop_end_us[l1], m[l1]))]
    last = order[np.r_[m[order][1:] != m[order][:-1], True]]
    return float(result.mainloop_us[last].mean()), float(result.mainloop_us[l1].mean())


def des(config, measured, mainloops, platform, extra: dict) -> tuple[dict, object]:
    params = rep._params(config, measured[config])
    params.update(extra)
    cfg = builder.Config(params, platform, mainloops)
    _, summary = builder.simulate(params, platform, "fast", trace=False, mainloop_records=mainloops)
    return summary, cfg


def errors(pred: dict, meas: dict) -> tuple[float, float, float, float]:
    """(speedup abs error max, kernel-time MAPE %, worst %, speedup abs error mean) over the configs."""
    sp, kt = [], []
    for c in meas:
        sp.append(abs(pred[c][0] / pred[c][1] - meas[c][0] / meas[c][1]))
        kt += [abs(pred[c][i] / meas[c][i] - 1) for i in (0, 1)]
    return max(sp), 100 * float(np.mean(kt)), 100 * max(kt), float(np.mean(sp))


def kernels(summary) -> tuple[float, float]:
    return summary["wave"]["kernel_us"], summary["interleaved"]["kernel_us"]


def variant(configs, measured, mainloops, platform, extra) -> dict:
    return {c: kernels(des(c, measured, mainloops, platform, extra)[0]) for c in configs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--quick", action="store_true", help="skip the sensitivity runs")
    args = parser.parse_args()
    mainloops, measured, local = load()
    host, nolink = catalog.host_platform(), rep.without_link(catalog.host_platform())
    configs = sorted(c for c in measured if c in local)
    calib = calibrate_compute_us(mainloops, HBM_TBPS)
    ml_meas = measured_means(mainloops)
    m_local = {c: (local[c]["wave"]["kernel_us"], local[c]["interleaved"]["kernel_us"]) for c in configs}
    m_host = {c: (measured[c]["wave"]["kernel_us"], measured[c]["interleaved"]["kernel_us"]) for c in configs}
    lines = [f"MoE local control vs a shared-HBM compute model on {host.name} ({commit_note()}; records {RECORDS})",
             f"HBM {HBM_TBPS} TB/s (the roofline's H200 figure, not fitted); share = fair (max-min) unless said; "
             "spread seed 0", "",
             "compute us per tile (GEMM-only records, inverted through the simulator; all compute-bound there):"]
    lines += [f"  {k[0]} {k[3]} hidden {k[4]:5d} intermediate {k[5]:5d}: {v:6.2f}" for k, v in sorted(calib.items())]

    base, cont, kind, alone, means, late = {}, {}, {}, {}, {}, {}
    for c in configs:
        s_b, cfg_b = des(c, measured, mainloops, nolink, {})
        s_c, cfg_c = des(c, measured, mainloops, nolink, {"compute": "contention"})
        base[c], cont[c] = kernels(s_b), kernels(s_c)
        kind[c] = kernels(des(c, measured, mainloops, nolink, {"compute": "contention", "contention_detail": "kind"})[0])
        alone[c] = ps_alone(cfg_b, calib)
        cfg_c.context_mainloops_us("wave")
        pre = {s: cfg_c.prepass.runs[s] for s in S}
        means[c] = {s: tuple(float(r.mainloop_us[t.tiles[:, 0] == k].mean()) for k in (L1, L2))
                    for s, (t, r) in pre.items()}
        t, r = pre["wave"]
        late[c] = _late_l1(t, r)
        means[c]["model"] = (cfg_b.t_l1_us - cfg_b.wait_overhead_us["l1"], cfg_b.t_l2_us - cfg_b.wait_overhead_us["l2"])

    lines += ["", "Local speedup (wave / interleaved kernel time), measured vs predicted:",
              f"{'config':34s} {'measured':>8s} {'DES':>6s} {'PS':>6s} {'PS+DES':>6s} {'kind':>6s}   "
              "kernel us wave/int: measured | DES | PS | PS+DES"]
    alone_k = {c: (alone[c]["wave"][0], alone[c]["interleaved"][0]) for c in configs}
    for c in configs:
        sp = lambda d: d[c][0] / d[c][1]  # noqa: E731
        lines.append(f"{c[5:]:34s} {sp(m_local):8.3f} {sp(base):6.3f} {sp(alone_k):6.3f} {sp(cont):6.3f} "
                     f"{sp(kind):6.3f}   {m_local[c][0]:5.0f}/{m_local[c][1]:5.0f} | {base[c][0]:5.0f}/{base[c][1]:5.0f}"
                     f" | {alone_k[c][0]:5.0f}/{alone_k[c][1]:5.0f} | {cont[c][0]:5.0f}/{cont[c][1]:5.0f}")
    lines += ["", "Mean mainloops, us, wave / interleaved: L1 | L2 (measured fused-local; DES = the pooled model, "
              "both schedules; PS = simulator alone; PS+DES = the anchored pre-pass)",
              f"{'config':34s} {'measured L1':>13s} {'L2':>11s} | {'DES':>11s} | {'PS L1':>11s} {'L2':>11s} | "
              f"{'PS+DES L1':>11s} {'L2':>11s}"]
    ratio_err = {"DES": [], "PS": [], "PS+DES": []}
    signs = {"DES": [0, 0], "PS": [0, 0], "PS+DES": [0, 0], "n": [0, 0]}
    for c in configs:
        mw, mi = ml_meas[(c, "wave")], ml_meas[(c, "interleaved")]
        a, p = alone[c], means[c]
        lines.append(f"{c[5:]:34s} {mw[0]:5.1f}/{mi[0]:5.1f}   {mw[1]:5.1f}/{mi[1]:5.1f} | {p['model'][0]:5.1f}/"
                     f"{p['model'][1]:5.1f} | {a['wave'][1]:5.1f}/{a['interleaved'][1]:5.1f} {a['wave'][2]:5.1f}/"
                     f"{a['interleaved'][2]:5.1f} | {p['wave'][0]:5.1f}/{p['interleaved'][0]:5.1f} "
                     f"{p['wave'][1]:5.1f}/{p['interleaved'][1]:5.1f}")
        for j in (0, 1):
            meas_ratio = mw[j] / mi[j]
            ratio_err["DES"].append(abs(1.0 - meas_ratio))
            ratio_err["PS"].append(abs(a["wave"][1 + j] / a["interleaved"][1 + j] - meas_ratio))
            ratio_err["PS+DES"].append(abs(p["wave"][j] / p["interleaved"][j] - meas_ratio))
            if abs(meas_ratio - 1) > 0.03:
                signs["n"][j] += 1
                for k, pred in (("PS", a["wave"][1 + j] / a["interleaved"][1 + j]), ("PS+DES", p["wave"][j] / p["interleaved"][j])):
                    signs[k][j] += int(np.sign(pred - 1) == np.sign(meas_ratio - 1) and abs(pred - 1) > 0.01)
    lines += ["", "wave/interleaved mean-mainloop ratio, abs error vs measured, mean / max (L1 | L2), and the "
              "configs whose ratio is off 1 by > 3 % measured where the prediction has the same sign:"]
    for k, v in ratio_err.items():
        l1, l2 = v[0::2], v[1::2]
        lines.append(f"  {k:7s} L1 {np.mean(l1):.3f} / {max(l1):.3f} | L2 {np.mean(l2):.3f} / {max(l2):.3f} | "
                     f"same sign L1 {signs[k][0]}, L2 {signs[k][1]} of {signs['n'][0]}, {signs['n'][1]}")
    lines += ["", "The wave's late L1 tiles (the last to end of each m-block, the ones its L2 tiles wait on) "
              "against all its L1 tiles, pre-pass mean us (PS+DES):"]
    lines += [f"  {c[5:]:34s} late {late[c][0]:5.1f}  all {late[c][1]:5.1f}" for c in configs]
    worst_s = max(max(alone[c][s][3] for s in S) for c in configs)
    lines += ["", f"simulator alone: slowest config x schedule {worst_s:.2f} s (one run; the anchor runs it "
              "a few times per schedule)", "",
              "Summary, local (vs kernel_local): speedup_abs_err_max | kernel_time_mape_local % | worst % | "
              "speedup abs err mean"]
    for name, d in (("DES (today)", base), ("PS alone", alone_k), ("PS+DES (compute=contention)", cont),
                    ("PS+DES, detail = kind", kind)):
        lines.append("  {:30s} {:.3f} | {:.1f} | {:.1f} | {:.3f}".format(name, *errors(d, m_local)))

    h_base = variant(configs, measured, mainloops, host, {})
    h_cont = variant(configs, measured, mainloops, host, {"compute": "contention"})
    h_kind = variant(configs, measured, mainloops, host, {"compute": "contention", "contention_detail": "kind"})
    lines += ["", "Over the host link (vs kernel records): speedup measured | DES | PS+DES | kind",
              f"{'config':34s} {'measured':>8s} {'DES':>6s} {'PS+DES':>6s} {'kind':>6s}   kernel us wave/int: "
              "measured | DES | PS+DES"]
    for c in configs:
        sp = lambda d: d[c][0] / d[c][1]  # noqa: E731
        lines.append(f"{c[5:]:34s} {sp(m_host):8.3f} {sp(h_base):6.3f} {sp(h_cont):6.3f} {sp(h_kind):6.3f}   "
                     f"{m_host[c][0]:5.0f}/{m_host[c][1]:5.0f} | {h_base[c][0]:5.0f}/{h_base[c][1]:5.0f} | "
                     f"{h_cont[c][0]:5.0f}/{h_cont[c][1]:5.0f}")
    lines.append("Summary, host: speedup_abs_err_max | kernel_time_mape % | worst % | speedup abs err mean")
    for name, d in (("DES (today)", h_base), ("PS+DES (compute=contention)", h_cont), ("PS+DES, detail = kind", h_kind)):
        lines.append("  {:30s} {:.3f} | {:.1f} | {:.1f} | {:.3f}".format(name, *errors(d, m_host)))

    if not args.quick:
        lines += ["", "Sensitivity, local (speedup_abs_err_max | kernel_time_mape_local % | speedup abs err mean):"]
        runs = [(f"contention, HBM {bw} TB/s", {"compute": "contention", "hbm_tbps": bw}) for bw in (3.4, 3.8, 4.8)]
        runs += [("contention, share = inflight", {"compute": "contention", "hbm_share": "inflight"}),
                 ("contention, mainloop_cv = 0", {"compute": "contention", "mainloop_cv": 0.0}),
                 ("DES (today), mainloop_cv = 0", {"mainloop_cv": 0.0})]
        for seed in (1, 2, 3):
            runs += [(f"DES (today), spread seed {seed}", {"spread_seed": seed}),
                     (f"contention, spread seed {seed}", {"compute": "contention", "spread_seed": seed})]
        for name, extra in runs:
            d = variant(configs, measured, mainloops, nolink, extra)
            e = errors(d, m_local)
            lines.append("  {:34s} {:.3f} | {:.1f} | {:.3f}".format(name, e[0], e[1], e[3]))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out / "moe_contention.txt", text)


if __name__ == "__main__":
    main()
