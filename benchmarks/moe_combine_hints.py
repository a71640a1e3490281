"""What the local-Combine control's stores into device memory cost the mainloops beside them: the fused MoE kernel on
the eighteen catalog layers, over the host link, locally, locally with the Combine hinted out of the L2, and locally
again (``hwkernels/run_moe_beside_device.sh hints``; ``hwkernels.moe_bench --combine-hint``).

The traces of all eighteen catalog layers (docs/moe.md, "All eighteen layers traced") found that tiles the gate
never holds run 0.97 (Linear-2) and 0.985 (Linear-1) of their local-control time over the link, at the same SM clock.
If the local Combine's lines in the L2 are the cost, the hinted local runs should come down to the host run's
mainloops. Per config and schedule: the median L1 and L2 mainloop (the kernel records' per-tile stamps, every trial
checked) of each run over the mean of the two plain local runs, their SM clocks, and the two plain local runs'
difference (the noise floor). Nothing is fitted.

    PYTHONPATH=. python benchmarks/moe_combine_hints.py RECORDS.jsonl[.gz] [--platform h100-pcie-host]
        [--out benchmarks/results]
writes <out>/moe_combine_hints_<platform>.txt.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from calibration.records import RecordError, load_records  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402

RUNS = ("host", "local", "local@cs", "local@evict_first", "local, again")
# the layers whose link is quiet (their traced stage above the gate under 0.1 of the L2 mainloops: docs/moe.md,
# "All eighteen layers traced"): there the host run's mainloops are the link-free baseline
QUIET = ("moe1-dsv4-flash-bf16-balanced-1024", "moe1-dsv4-flash-bf16-hot-1024", "moe1-glm-5.2-fp8-balanced-1024",
         "moe1-qwen3.5-bf16-zipf-1024", "moe1-mimo-v2.5-fp8-hot-1024", "moe1-hy3-bf16-balanced-1024",
         "moe1-hunyuan-large-bf16-balanced-1024")
STATS = ("l1_mainloop_us", "l2_mainloop_us", "run_clock_mhz", "kernel_us")


def runs(rs) -> dict:
    """{(config, schedule): {run: {stat: median}}}: the hints call's runs, plain local runs told apart by order."""
    out: dict = {}
    for r in rs.records:
        if r.data["kind"] not in ("kernel", "kernel_local"):
            continue
        p = r.data["params"]
        point = out.setdefault((p["config"], p["schedule"]), {})
        if r.data["kind"] == "kernel":
            name = "host"
        elif p.get("combine_hint"):
            name = f"local@{p['combine_hint']}"
        else:
            name = "local" if "local" not in point else "local, again"
        point[name] = {s: float(r.data["stats"][s]["median"]) for s in STATS if s in r.data["stats"]}
    return out


def table(points: dict, only=None) -> tuple[list[str], dict]:
    lines = ["| config | schedule | " + " | ".join(f"{run}: L1 / L2" for run in RUNS if run != "local")
             + " | MHz " + " / ".join(RUNS) + " |",
             "| --- | --- | " + " | ".join("---:" for run in RUNS if run != "local") + " | --- |"]
    ratios: dict = {run: {"l1": [], "l2": []} for run in RUNS if run != "local"}
    for (config, schedule), got in sorted(points.items()):
        if not {"local", "local, again"} <= set(got) or (only is not None and config not in only):
            continue
        base = {k: np.mean([got["local"][f"{k}_mainloop_us"], got["local, again"][f"{k}_mainloop_us"]])
                for k in ("l1", "l2")}
        cells = []
        for run in ratios:
            if run not in got:
                cells.append("-")
                continue
            r = {k: got[run][f"{k}_mainloop_us"] / base[k] for k in ("l1", "l2")}
            for k in r:
                ratios[run][k].append(r[k])
            cells.append(f"{r['l1']:.3f} / {r['l2']:.3f}")
        mhz = " / ".join(f"{got[run]['run_clock_mhz']:.0f}" if run in got and "run_clock_mhz" in got[run] else "-"
                         for run in RUNS)
        lines.append(f"| {config} | {schedule} | " + " | ".join(cells) + f" | {mhz} |")
    return lines, ratios


def summary(ratios: dict) -> list[str]:
    """Per run: the median (range) of its L1 and L2 ratios."""
    return [f"{run}: L1 median {np.median(v['l1']):.3f} ({min(v['l1']):.3f}-{max(v['l1']):.3f}), "
            f"L2 median {np.median(v['l2']):.3f} ({min(v['l2']):.3f}-{max(v['l2']):.3f}) over {len(v['l2'])}"
            for run, v in ratios.items() if v["l2"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="moe_combine_hints", description=__doc__.splitlines()[0])
    ap.add_argument("records", type=Path)
    ap.add_argument("--platform", default="h100-pcie-host", help="the machine's profile name (the output's name)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = ap.parse_args(argv)
    try:
        rs = load_records([args.records])
    except RecordError as exc:
        print(f"moe_combine_hints: {exc}", file=sys.stderr)
        return 2
    points = runs(rs)
    lines, ratios = table(points)
    if len(lines) == 2:
        print(f"moe_combine_hints: {args.records}: no config with both plain local runs", file=sys.stderr)
        return 2
    platform = args.platform
    if not re.fullmatch(r"[\w.-]+", platform):
        print(f"moe_combine_hints: --platform {platform!r}: letters, digits, '.', '_' and '-' only", file=sys.stderr)
        return 2
    quiet = table(points, QUIET)[1]
    text = "\n".join([
        f"The Combine's destination and the mainloops beside it, {platform} ({rs.platform.get('gpu', '?')}; records "
        f"{args.records.name}, commits {', '.join(sorted({str(r.data.get('commit')) for r in rs.records}))}); "
        f"{commit_note()}",
        "per config and schedule: median L1 / L2 mainloop of each run over the mean of the two plain local runs; "
        "the runs' SM clocks", "", *lines, "", "every config:", *summary(ratios),
        "", "the quiet-link layers (QUIET):", *summary(quiet)]) + "\n"
    print(text, end="")
    atomic_write(args.out / f"moe_combine_hints_{platform}.txt", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
