"""The DES-picked Algorithm 1 leads measured: same-session speedups at the default and at the pick,
and the measured ranking of leads beside the DES's.

Inputs (one device call, `calibration/records/logs/h200-pcie-host-moe/lead-<sha>/run_lead.sh`):
``repeats/h200-pcie-host-moe-lead-<sha>.jsonl.gz`` (wave + interleaved at each scenario's lead, the
DES's pick), ``...-lead-default-<sha>.jsonl`` (the same wave records + interleaved at ceil(2
D_knee), measured in the same run: the run's records split by their lead) and
``...-lead-sweep-<sha>.jsonl`` (a second invocation: every candidate lead on four configs, with
its own wave). Predictions: ``xsim.report.moe.build`` on each file (none of them carries mainloop
records, so the compute model is the shipped one, from the shipped records' fused-local
mainloops) and, for the sweep, the DES's candidate table of :func:`xsim.moe.lead.pick_lead`
(what picked the leads, before the measurement).

    PYTHONPATH=. /work/venv/bin/python benchmarks/moe_lead_measured.py --sha 0b8db41 [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
from provenance import commit_note  # benchmarks/ is the script's folder

from calibration.records import load_records
from xsim.builders import moe as builder
from xsim.fileio import atomic_write
from xsim.moe.lead import pick_lead
from xsim.platform import resolve_platform
from xsim.report import moe as rep
from xsim.scenario import load_scenario

REPEATS = Path("calibration/records/repeats")


def rows_of(path: Path, platform) -> dict:
    built = rep.build(load_records([str(path)]), platform, paper_des=False, level="records")
    return {r.config: r for r in built.rows}, built.summary


def kendall(a, b) -> float:
    """Kendall's tau-a of two orderings of the same items (ties count as discordant halves)."""
    pairs = list(itertools.combinations(range(len(a)), 2))
    s = sum(np.sign(a[i] - a[j]) * np.sign(b[i] - b[j]) for i, j in pairs)
    return float(s / len(pairs)) if pairs else float("nan")


def sweep(path: Path, platform) -> list[str]:
    rs = load_records([str(path)])
    meas = {}
    for r in rs.select("moe", "kernel"):
        p = r.params
        meas.setdefault(p["config"], {})[(p["schedule"], float(p["lead"]))] = r.stat("kernel_us", "median")
    lines = ["", "lead sweep (same invocation per config): interleaved kernel us measured / DES (mean over spread "
             "seeds 0-3), speedup over the run's wave measured / DES",
             "| config | lead | measured us | DES us | measured speedup | DES speedup |", "| --- | --- | --- | --- | --- | --- |"]
    summary = []
    for config, m in meas.items():
        params = {**load_scenario(config).params, "spread_seeds": rep.SPREAD_SEEDS}
        _, s = builder.simulate({**params, "schedule": "wave"}, platform, "fast", trace=False)
        pick = pick_lead(params, platform, spread_seeds=rep.SPREAD_SEEDS)
        wave = m[("wave", 0.0)]
        leads = [lead for _, lead, _ in pick.candidates]
        mu = np.array([m[("interleaved", float(lead))] for lead in leads])
        du = np.array([t for _, _, t in pick.candidates])
        for lead, a, b in zip(leads, mu, du):
            mark = " (pick)" if lead == pick.lead else (" (default)" if lead == pick.default else "")
            lines.append(f"| {config.removeprefix('moe1-')} | {lead}{mark} | {a:.0f} | {b:.0f} | {wave / a:.3f} "
                         f"| {s['kernel_us'] / b:.3f} |")
        best = leads[int(np.argmin(mu))]
        summary.append(f"{config.removeprefix('moe1-')}: DES pick {pick.lead}, measured best {best} "
                       f"({'agree' if best == pick.lead else 'differ'}; measured at the pick "
                       f"{mu[leads.index(pick.lead)] / mu.min() - 1:+.1%} over the best); Kendall tau "
                       f"{kendall(mu, du):+.2f}; measured spread of the leads {mu.max() / mu.min() - 1:.1%}, "
                       f"DES {du.max() / du.min() - 1:.1%}")
    return lines + [""] + summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sha", required=True, help="the measured commit (7 hex) in the records' file names")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    platform = resolve_platform("h200-pcie-host")
    pick_rows, pick_sum = rows_of(REPEATS / f"h200-pcie-host-moe-lead-{args.sha}.jsonl.gz", platform)
    def_rows, def_sum = rows_of(REPEATS / f"h200-pcie-host-moe-lead-default-{args.sha}.jsonl.gz", platform)
    lines = [f"DES-picked leads measured on one H200 over the host link (records of {args.sha}; {commit_note()})",
             "| config | default / pick | measured speedup default / pick | predicted default / pick "
             "| error default / pick | measured int us default / pick | DES int us default / pick |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    agree = []
    for config in sorted(pick_rows):
        a, b = def_rows[config], pick_rows[config]
        ld, lp = a.measured["interleaved"]["lead"], b.measured["interleaved"]["lead"]
        md, mp = a.measured["interleaved"]["kernel_us"], b.measured["interleaved"]["kernel_us"]
        pd, pp = a.predicted["interleaved"]["kernel_us"], b.predicted["interleaved"]["kernel_us"]
        if ld != lp:
            agree.append(np.sign(md - mp) == np.sign(pd - pp))
        lines.append(f"| {config.removeprefix('moe1-')} | {ld:g} / {lp:g} | {a.speedup_measured:.3f} / "
                     f"{b.speedup_measured:.3f} | {a.speedup_predicted:.3f} / {b.speedup_predicted:.3f} | "
                     f"{a.speedup_predicted - a.speedup_measured:+.3f} / {b.speedup_predicted - b.speedup_measured:+.3f} "
                     f"| {md:.0f} / {mp:.0f} | {pd:.0f} / {pp:.0f} |")
    keys = ("geomean_speedup_measured", "geomean_speedup_predicted", "geomean_speedup_skewed_measured",
            "n_skewed_gain_configs", "speedup_abs_err_max", "n_speedup_within_0_05", "selector_worst",
            "kernel_time_mape")
    for name, s in (("default leads", def_sum), ("picked leads", pick_sum)):
        lines.append(f"{name}: " + ", ".join(f"{k} {s[k]:.4g}" for k in keys))
    lines.append(f"configs whose pick differs from the default: {len(agree)}; the measured interleaved time moves "
                 f"the way the DES says in {sum(agree)}")
    lines += sweep(REPEATS / f"h200-pcie-host-moe-lead-sweep-{args.sha}.jsonl.gz", platform)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out / "moe_lead_measured.txt", text)


if __name__ == "__main__":
    main()
