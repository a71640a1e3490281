"""How much of the MoE speedup error is the SM clock? Wave and interleaved at their own clocks.

The fused MoE kernel's CLK sums (since ``24fb8c8``: every program's SM cycles and nanoseconds per
launch) give each timed launch its own mean SM clock. One call at ``24fb8c8`` re-ran the kernel
phase of the one-GPU catalog over the host link and locally (20 trials, every output checked;
``calibration/records/repeats/h200-pcie-host-moe-clock-24fb8c8.jsonl.gz``, logs
``logs/h200-pcie-host-moe/clock-24fb8c8/``). Per config this prints both schedules' clocks, the
measured speedup (wave / interleaved, each at its own clock), the speedup at one clock (the
interleaved time at the wave's clock, T_int f_int / f_wave: as if all of it scaled with the clock,
which the link-bound part does not) and the shipped report's DES prediction (no DVFS in it), with
the absolute errors; the shipped records' measured speedup beside them for the run-to-run spread.

    PYTHONPATH=. python benchmarks/moe_clock.py    # writes benchmarks/results/moe_clock.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from calibration.records import load_records, load_shipped_records  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402
from xsim.report import moe  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "calibration" / "records" / "repeats" / "h200-pcie-host-moe-clock-24fb8c8.jsonl.gz"
OUT = ROOT / "benchmarks" / "results" / "moe_clock.txt"


def clocked(rs, kind: str) -> dict:
    """config -> schedule -> (median kernel us, median run clock MHz) of the run's records."""
    out: dict = {}
    for r in rs.select("moe", kind):
        out.setdefault(r.params["config"], {})[r.params["schedule"]] = (
            r.stat("kernel_us", "median"), r.stat("run_clock_mhz", "median"))
    return out


def rows(platform):
    rep = moe.build(load_shipped_records("moe", platform.name), platform, level="records")
    run = load_records([RUN])
    host, local = clocked(run, "kernel"), clocked(run, "kernel_local")
    out = []
    for row in rep.rows:
        h = host.get(row.config)
        if not h or not all(s in h for s in moe.SCHEDULES):
            continue
        (tw, fw), (ti, fi) = h["wave"], h["interleaved"]
        loc = local.get(row.config, {})
        lf = (loc["wave"][1], loc["interleaved"][1]) if all(s in loc for s in moe.SCHEDULES) else (np.nan, np.nan)
        out.append((row.config, fw, fi, tw / ti, tw / (ti * fi / fw), row.speedup_predicted,
                    row.speedup_measured, *lf))
    return out


def table(rs) -> str:
    lines = ["| config | MHz wave / interleaved | speedup measured | at one clock | predicted (DES) "
             "| error raw | error at one clock | shipped run's speedup | local MHz wave / int |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    raw, one = [], []
    for name, fw, fi, s, s1, pred, shipped, lw, li in rs:
        raw.append(abs(pred - s))
        one.append(abs(pred - s1))
        lines.append(f"| {name.removeprefix('moe1-')} | {fw:.0f} / {fi:.0f} | {s:.3f} | {s1:.3f} | {pred:.3f} | "
                     f"{pred - s:+.3f} | {pred - s1:+.3f} | {shipped:.3f} | {lw:.0f} / {li:.0f} |")
    ratio = [fi / fw for _, fw, fi, *_ in rs]
    lines += ["",
              f"interleaved clock / wave clock: median {np.median(ratio):.4f}, range {min(ratio):.4f} .. {max(ratio):.4f}",
              f"|predicted - measured| speedup: raw max {max(raw):.3f}, mean {np.mean(raw):.3f}, "
              f"{sum(e <= 0.05 for e in raw)} of {len(raw)} within 0.05; at one clock max {max(one):.3f}, "
              f"mean {np.mean(one):.3f}, {sum(e <= 0.05 for e in one)} of {len(one)} within 0.05"]
    return "\n".join(lines)


def main(argv=None) -> int:
    platform = resolve_platform("h200-pcie-host")
    text = f"# benchmarks/moe_clock.py on {platform.name}, {commit_note()}\n\n" + table(rows(platform)) + "\n"
    atomic_write(OUT, text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
