"""Choose and write the MoE scenario catalogs (xsim/moe/catalog.py) with the what-if tool.

For every one-GPU entry: eq. 14 with the wave gap and interleaved (the regime), the DES
kernel time of both schedules and their speedup on the host-link profile (the placeholder
R = 50 GB/s, Q = 1 MiB, T_iss0 = 1 us until h200-pcie-host is shipped), and the same speedup
with an unlimited link (what the schedules differ by without any X-Stage effect: wave tails,
balance). Each one-GPU entry's Algorithm 1 lead is the what-if tool's pick (xsim/moe/lead.py:
the lowest DES interleaved time over the candidate leads, mean over the report's spread seeds;
table in moe_lead_pick.txt), made before any measurement at it. ``--write`` also writes
scenarios/<name>.toml for both catalogs, the one-GPU ones with ``lead`` = the pick.

    PYTHONPATH=. /work/venv/bin/python benchmarks/moe_catalog.py [--write] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from provenance import commit_note  # benchmarks/ is the script's folder

from xsim.builders import moe
from xsim.moe import catalog
from xsim.moe.lead import MULTIPLES, pick_lead
from xsim.params import resolve
from xsim.report.moe import SPREAD_SEEDS


def regime(pred: dict) -> str:
    if pred["eq14_wave_ok"]:
        return "covered"
    return "satisfied" if pred["eq14_int_ok"] else "violated"


def lead_picks(platform) -> dict:
    """{name: LeadPick} for every one-GPU entry (its shipped lead ignored)."""
    out = {}
    for entry in catalog.ONE_GPU:
        out[entry.name] = pick_lead(resolve(moe.PARAMS, catalog.params(entry), entry.name), platform,
                                    spread_seeds=SPREAD_SEEDS)
    return out


def lead_source(pick, platform, note: str) -> str:
    cands = ", ".join(f"{lead}: {t:.0f} us" for _, lead, t in pick.candidates)
    seeds = f"{pick.spread_seeds[0]}-{pick.spread_seeds[1]}"
    return (f"the what-if tool's pick (xsim/moe/lead.py, benchmarks/moe_catalog.py --write, {note}): "
            f"the lowest DES interleaved kernel time on {platform.name}, mean over spread seeds {seeds}, among "
            f"{'/'.join(f'{m:g}' for m in MULTIPLES)} x D_knee = {pick.d_knee:.2f} rows ({cands}); "
            f"the default ceil(2 D_knee) is {pick.default}; no measurement at any lead entered")


def lead_table(picks: dict, platform, note: str) -> str:
    lines = [f"Algorithm 1 lead picked by the DES on {platform.name} (interleaved kernel us, mean over spread seeds "
             f"of the report; {note})",
             f"{'scenario':42s} {'D_knee':>6s} {'default':>7s} {'pick':>4s} {'gain':>6s}  lead:us ..."]
    for name, pk in picks.items():
        gain = pk.predicted_us(pk.default) / pk.predicted_us(pk.lead)
        lines.append(f"{name:42s} {pk.d_knee:6.2f} {pk.default:7d} {pk.lead:4d} {gain:6.3f}  "
                     + " ".join(f"{lead}:{t:.0f}" for _, lead, t in pk.candidates))
    return "\n".join(lines) + "\n"


def evaluate(entry, platform, lead: int | None = None) -> dict:
    params = resolve(moe.PARAMS, catalog.params(entry, lead), entry.name)
    pred = moe.predict(params, platform)
    _, s = moe.simulate(params, platform, "fast", trace=False)
    free = dataclasses.replace(platform, drain_rate_gbps=1e6, capacity=catalog.CapacityModel(max_bytes=1e15))
    _, s_free = moe.simulate(params, free, "fast", trace=False)
    return {"name": entry.name, "intended": entry.regime, "regime": regime(pred),
            "t_l1_us": s["l1_mainloop_us"], "t_l2_us": s["l2_mainloop_us"], "lead": s["lead"],
            "wave_us": s["wave"]["kernel_us"], "int_us": s["interleaved"]["kernel_us"], "speedup": s["speedup"],
            "speedup_no_link": s_free["speedup"], "span_wave_med_us": s["wave"]["span_us"]["median"],
            "span_int_med_us": s["interleaved"]["span_us"]["median"], "compute_model": s["compute_model"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write scenarios/<name>.toml for both catalogs")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    platform = catalog.host_platform()
    note = commit_note()      # before any file is written
    picks = lead_picks(platform)
    rows = [evaluate(e, platform, picks[e.name].lead) for e in catalog.ONE_GPU]
    header = (f"one-GPU MoE catalog on {platform.name} (R {platform.drain_rate_gbps:g} GB/s, "
              f"Q(132) {platform.capacity_bytes(132):.0f} B, T_iss0(132, 32 KiB) {platform.t_iss0_us(132, 32768):.3g} us; "
              f"mainloops: {rows[0]['compute_model']}; fast engine; {note})")
    lines = [header, f"{'scenario':42s} {'intended':9s} {'eq.14':9s} {'T_L1':>6s} {'T_L2':>6s} {'lead':>4s} "
             f"{'wave us':>8s} {'int us':>8s} {'speedup':>7s} {'no-link':>7s} {'span w/i med us':>15s}"]
    for r in rows:
        lines.append(f"{r['name']:42s} {r['intended']:9s} {r['regime']:9s} {r['t_l1_us']:6.1f} {r['t_l2_us']:6.1f} "
                     f"{r['lead']:4.0f} {r['wave_us']:8.0f} {r['int_us']:8.0f} {r['speedup']:7.3f} "
                     f"{r['speedup_no_link']:7.3f} {r['span_wave_med_us']:7.1f}/{r['span_int_med_us']:<7.1f}")
    mismatched = [r["name"] for r in rows if r["regime"] != r["intended"]]
    lines.append(f"regimes as intended: {len(rows) - len(mismatched)}/{len(rows)}"
                 + (f" (not: {', '.join(mismatched)})" if mismatched else ""))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "moe_catalog.txt").write_text(text)
    (args.out / "moe_catalog.json").write_text(json.dumps({"platform": platform.name, "rows": rows}, indent=2) + "\n")
    picked = lead_table(picks, platform, note)
    print(picked, end="")
    (args.out / "moe_lead_pick.txt").write_text(picked)
    (args.out / "moe_lead_pick.json").write_text(json.dumps(
        {"platform": platform.name, "picks": {k: v.to_dict() for k, v in picks.items()}}, indent=2) + "\n")
    if args.write:
        for entry in catalog.ONE_GPU:
            pk = picks[entry.name]
            Path("scenarios", f"{entry.name}.toml").write_text(
                catalog.scenario_toml(entry, pk.lead, lead_source(pk, platform, note)))
        for entry in catalog.PAPER:
            Path("scenarios", f"{entry.name}.toml").write_text(catalog.scenario_toml(entry))


if __name__ == "__main__":
    main()
