"""Predictions for the fused MoE on N GPUs (issues 13, 14) and on a newly calibrated one-GPU host
platform (``h100-pcie-host``), committed before anyone measures them.

For each case the DES (fast engine) runs both schedules of every config and the selector:
- ``h200-nvlink-x2`` at EP = 2 and EP = 8: the one-GPU catalog's shapes (tokens per rank as on
  one GPU), Combine into the token's source rank over NVLink (the profile's rate spread over the
  EP - 1 peers), mainloops from our measured one-H200 mainloop records (the same kernel on the
  same GPU: ``calibration/records/h200-pcie-host-moe.jsonl``);
- ``paper-8gpu`` at EP = 8: the paper's matrix (``scenarios/moe8-*``) from shapes alone (roofline
  compute), the paper's platform as published.
What a later measurement tests is the speedup per config and the selector's pick, not the
absolute kernel time of a GPU we have not measured.

    PYTHONPATH=. python benchmarks/moe_predictions.py [--cases NAME,...]
writes benchmarks/results/moe_predictions_<platform>_ep<N>.json (atomically) and a summary table
(``moe_predictions.txt`` for the default cases, ``moe_predictions_<cases>.txt`` for others).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from math import exp, log
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from xsim.builders import moe  # noqa: E402
from xsim.moe import catalog  # noqa: E402
from xsim.params import resolve  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402
from xsim.report.moe import SPREAD_SEEDS  # noqa: E402
from xsim.scenario import load_scenario  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MAINLOOP_RECORDS = ROOT / "calibration" / "records" / "h200-pcie-host-moe.jsonl"
CASES = {
    "h200-nvlink-x2_ep2": ("h200-nvlink-x2", 2, "one-gpu"),
    "h200-nvlink-x2_ep8": ("h200-nvlink-x2", 8, "one-gpu"),
    "paper-8gpu_ep8": ("paper-8gpu", 8, "paper"),
    # one H100 over its host link: the shipped one-GPU scenarios as they stand, predicted as
    # ``xsim report --experiment moe`` predicts them (spread seeds averaged), on the H100's own
    # profile and mainloop records (calibration/records/h100-pcie-host-*.jsonl)
    "h100-pcie-host_ep1": ("h100-pcie-host", 1, "host"),
}
MULTI_GPU = tuple(n for n, (_, ep, _) in CASES.items() if ep > 1)   # the default: issues 13, 14


def entries(kind: str, ep: int):
    """The configs of a case: the one-GPU catalog re-run at EP = ep, or the paper's matrix."""
    if kind == "paper":
        return list(catalog.PAPER)
    return [replace(e, ep=ep) for e in catalog.ONE_GPU if catalog.FAMILIES[e.family]["experts"] % ep == 0]


def case_params(entry, kind: str) -> dict:
    if kind == "host":      # the scenario file itself, as the report reads it
        return {**load_scenario(entry.name).params, "schedule": "both", "spread_seeds": SPREAD_SEEDS}
    p = catalog.params(entry)
    if kind == "one-gpu":   # the one-GPU kernel's tiling and its measured mainloops, on more GPUs
        p.update(catalog.ONE_GPU_TILING, mainloop_records=str(MAINLOOP_RECORDS))
    return p


def run_case(name: str) -> dict:
    platform_name, ep, kind = CASES[name]
    platform = resolve_platform(platform_name)
    rows, t0 = [], time.perf_counter()
    for entry in entries(kind, ep):
        params = resolve(moe.PARAMS, case_params(entry, kind), entry.name)
        _, s = moe.simulate(params, platform, "fast", trace=False)
        rows.append({"config": entry.name.replace("moe1-", f"moe{ep}-", 1), "family": entry.family,
                     "precision": entry.precision, "routing": entry.routing, "tokens_per_rank": entry.tokens,
                     "ep": ep, "speedup": s["speedup"], "wave_kernel_us": s["wave"]["kernel_us"],
                     "interleaved_kernel_us": s["interleaved"]["kernel_us"], "selector": s["selector"]["schedule"],
                     "compute_model": s.get("compute_model"), "summary": s})
    return {"case": name, "platform": platform_name, "ep": ep, "catalog": kind, "commit": commit_note(),
            "seconds": time.perf_counter() - t0, "rows": rows,
            "geomean_speedup": exp(sum(log(r["speedup"]) for r in rows) / len(rows)) if rows else None}


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(MULTI_GPU))
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    lines = []
    for name in args.cases.split(","):
        doc = run_case(name)
        write_atomic(args.out / f"moe_predictions_{name}.json", json.dumps(doc, indent=1, default=float) + "\n")
        lines.append(f"{name}: {len(doc['rows'])} configs, geomean predicted speedup {doc['geomean_speedup']:.3f} "
                     f"({doc['seconds']:.1f} s, {doc['commit']})")
        lines += [f"  {r['config']:44s} {r['speedup']:6.3f}  pick {r['selector']}" for r in doc["rows"]]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    names = args.cases.split(",")
    summary = "moe_predictions.txt" if names == list(MULTI_GPU) else f"moe_predictions_{'_'.join(names)}.txt"
    write_atomic(args.out / summary, text)


if __name__ == "__main__":
    main()
