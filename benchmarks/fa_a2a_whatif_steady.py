"""The steady-state what-if from calibration alone, against the steady runs (issue 11).

``xsim simulate fa-a2a-host-gluon-steady`` per measured point: the scenario's Q-loop (fitted once on
run 15's FA-only records), the host link's profile and the power cap's clock law (fitted once on the
duty records, FA-only's own clock the law's anchor): no measured time or clock of the point itself
goes in, unlike the report's "des" model, which anchors on the measured FA-only. Each variant's
predicted time beside the measured median, for run 15 (the Q-loop's own records: FA-only's times
are in-sample, the other variants' never fitted), run 16 (a repeat that no fit saw) and run 17 (lengths
no run had measured, predicted first: ``--predict``); with the law and at a fixed clock (``clock_law = none``).

    PYTHONPATH=. python benchmarks/fa_a2a_whatif_steady.py [--run NAME=FILE ...]
writes benchmarks/results/fa_a2a_whatif_steady.txt (atomically); ``--run`` adds a steady run's records
(a repeats file). ``--predict M,M,...`` writes only the predictions at lengths no run has measured,
to benchmarks/results/fa_a2a_whatif_steady_predicted.txt: committed before the run that tests them.
"""

from __future__ import annotations

import argparse
import math
import sys
from statistics import fmean as mean
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from calibration.records import load_shipped_records, parse_texts, shipped_repeat_files  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402
from xsim.report.fa_a2a_points import collect  # noqa: E402
from xsim.scenario import shipped_scenarios  # noqa: E402

SCENARIO = "fa-a2a-host-gluon-steady"
VARIANTS = ("fa-only", "fused", "cc", "fused-paced")
REPEATS = {"run 16": "h200-pcie-host-fa-a2a-run16-repeat-steady-bd13b95.jsonl.gz",   # shipped repeats, no fit saw
           "run 17": "h200-pcie-host-fa-a2a-run17-new-lengths-steady-d688c63.jsonl.gz"}  # lengths predicted first
RESULTS = Path(__file__).resolve().parent / "results"
OUT, PREDICTED = RESULTS / "fa_a2a_whatif_steady.txt", RESULTS / "fa_a2a_whatif_steady_predicted.txt"
TOKENS = 4096   # hwkernels/fa_bench_args.py: batch = max(1, tokens // M), heads 32


def series(rs, params):
    key = (params["head_dim"], params["block_m"], params["block_n"], params["sp"], params["destination"],
           "gluon", params["stagger_us"], "steady")
    return sorted(collect(rs, [])[key].values(), key=lambda p: p.seq_len)


def predict(scenario, platform, m: int, batch: int, variant: str, law: str, pace: int = 0) -> dict:
    s = scenario.with_overrides([f"seq_len={m}", f"batch={batch}", f"variant={variant}", f"clock_law={law}"]
                                + ([f"pace={pace}"] if variant == "fused-paced" and pace else []))
    _, summary = s.simulate(platform, "fast", trace=False)
    return {"us": summary["kernel_us"]["mean"], "mhz": summary.get("clock", {}).get("predicted_mhz", math.nan)}


def predictions_only(scenario, platform, lengths: list[int]) -> str:
    lines = [f"# {SCENARIO} on {platform.name} (DES, fast engine), predicted at {commit_note()} before any run at "
             "these lengths: kernel us per launch and SM clock MHz, with the clock law (and at a fixed clock)",
             "| M | batch | variant | law us | law MHz | fixed us |", "| ---: | ---: | --- | ---: | ---: | ---: |"]
    for m in lengths:
        batch = max(1, TOKENS // m)
        for v in VARIANTS:
            got = {law: predict(scenario, platform, m, batch, v, law) for law in ("records", "none")}
            lines.append(f"| {m} | {batch} | {v} | {got['records']['us']:.1f} | {got['records']['mhz']:.0f} | "
                         f"{got['none']['us']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", action="append", default=[], metavar="NAME=FILE", help="a steady run's records")
    ap.add_argument("--predict", default="", metavar="M,M,...", help="only predict at these lengths")
    args = ap.parse_args(argv)
    scenario = shipped_scenarios()[SCENARIO]
    platform = resolve_platform(scenario.platform)
    if args.predict:
        text = predictions_only(scenario, platform, [int(m) for m in args.predict.split(",") if m])
        atomic_write(PREDICTED, text, "predictions")
        print(text)
        return 0
    runs = {"run 15": load_shipped_records("fa-a2a", platform.name)}
    files = {e.name: e for e in shipped_repeat_files(platform.name, "fa-a2a")}
    for name, file in REPEATS.items():
        runs[name] = parse_texts([(file, files[file].read_bytes())])
    for item in args.run:
        name, _, path = item.partition("=")
        runs[name] = parse_texts([(Path(path).name, Path(path).read_bytes())])
    lines = [f"# {SCENARIO} on {platform.name} (DES, fast engine) against the steady runs, at {commit_note()}",
             "# predicted / measured kernel us per launch (CUDA-graph replay medians); clock MHz predicted "
             "(law) / measured (CLK); fixed = clock_law none"]
    summary = []
    for run, rs in runs.items():
        points = series(rs, scenario.params)
        lines += ["", f"## {run}", "| M | variant | measured | law | err % | fixed | err % | MHz law / measured |",
                  "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
        errs = {v: {"law": [], "none": []} for v in VARIANTS}
        for p in points:
            for v in VARIANTS:
                meas = p.get(v)
                if not math.isfinite(meas):
                    continue
                got = {law: predict(scenario, platform, p.seq_len, p.shape.batch, v, law, p.pace)
                       for law in ("records", "none")}
                e_law, e_fix = (100 * (got[k]["us"] / meas - 1) for k in ("records", "none"))
                errs[v]["law"].append(abs(e_law))
                errs[v]["none"].append(abs(e_fix))
                lines.append(f"| {p.seq_len} | {v} | {meas:.1f} | {got['records']['us']:.1f} | {e_law:+.1f} | "
                             f"{got['none']['us']:.1f} | {e_fix:+.1f} | {got['records']['mhz']:.0f} / "
                             f"{p.run_clock_mhz.get(v, math.nan):.0f} |")
        for v in VARIANTS:
            if errs[v]["law"]:
                summary.append(f"| {run} | {v} | {len(errs[v]['law'])} | {mean(errs[v]['law']):.2f} | "
                               f"{max(errs[v]['law']):.1f} | {mean(errs[v]['none']):.2f} | {max(errs[v]['none']):.1f} |")
    lines += ["", "## MAPE", "| run | variant | points | law MAPE % | law max % | fixed MAPE % | fixed max % |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: |", *summary]
    text = "\n".join(lines) + "\n"
    atomic_write(OUT, text, "what-if result")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
