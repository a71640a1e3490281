"""The fused MoE kernel timed back to back, predicted at the power cap by its own clock law (issue 10).

Run back to back the kernel holds the board's power cap, and the two schedules do not clock alike
(docs/moe.md, "Steady-state timing"): the burst-calibrated DES at one clock mispredicts the steady
speedup. The MoE kernel's own law (``calibration.power.fit_moe_clock_law`` on the shipped duty records
of ``hwkernels.moe_duty``: the local-Combine kernel alone and with idle gaps, no link) gives each
schedule's clock from its busy fraction, and ``xsim.moe.clocked`` solves time and clock together on
the host link's DES (the report's prediction for steady records, ``xsim report --records STEADY``).
Nothing in it is a measured time over the link. Per steady run and config: the measured times and
clocks (CLK) of both schedules beside the predicted ones, the speedup measured, at the cap and at
one clock.

    PYTHONPATH=. python benchmarks/moe_clock_law.py [--platform NAME] [--moe-level LEVEL] [--law DUTY.jsonl]
        [STEADY.jsonl ...]
writes benchmarks/results/moe_clock_law.txt (moe_clock_law_<platform>.txt for a platform other than
h200-pcie-host; a ``_predicted`` suffix at ``--moe-level predicted``, ``_law-<file>`` with ``--law``); the
steady runs default to the platform's shipped ``repeats/<platform>-moe-kernels-steady-*``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from calibration.power import moe_clock_law_for  # noqa: E402
from calibration.records import RecordError, load_records, record_stem, shipped_repeat_files  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402
from xsim.platform import ProfileError, resolve_platform  # noqa: E402
from xsim.report import moe  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PLATFORM = "h200-pcie-host"


def outputs(platform: str, level: str = "records", law: Path | None = None) -> tuple[list[Path], Path]:
    """The platform's shipped steady runs and the result file."""
    stem = "moe_clock_law" if platform == PLATFORM else f"moe_clock_law_{platform}"
    stem = stem if level == "records" else f"{stem}_{level}"
    name = f"{stem}.txt" if law is None else f"{stem}_law-{record_stem(law.name)}.txt"
    return shipped_repeat_files(platform, "moe-kernels-steady"), ROOT / "benchmarks" / "results" / name


def _pair(values) -> str:
    return " / ".join(f"{v:.0f}" for v in values)


def table(rep) -> list[str]:
    lines = ["| config | measured us w / i | MHz w / i | predicted at the cap us w / i | MHz w / i | speedup "
             "measured | at the cap | error | at one clock | error |",
             "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    cap, one = [], []
    for r in rep.rows:
        if r.config not in rep.summary["configs_at_cap"]:
            continue
        m, p = r.measured, r.predicted
        s, s_cap, s_one = r.speedup_measured, r.speedup_predicted, p["speedup_fixed_clock"]
        cap.append(s_cap - s)
        one.append(s_one - s)
        times = _pair(m[x]["kernel_us"] for x in moe.SCHEDULES), _pair(p[x]["kernel_us"] for x in moe.SCHEDULES)
        clocks = (_pair(m[x]["run_clock_mhz"] for x in moe.SCHEDULES),
                  _pair(p["clock"][x]["predicted_mhz"] for x in moe.SCHEDULES))
        lines.append(f"| {r.config.removeprefix('moe1-')} | {times[0]} | {clocks[0]} | {times[1]} | {clocks[1]} | "
                     f"{s:.3f} | {s_cap:.3f} | {cap[-1]:+.3f} | {s_one:.3f} | {one[-1]:+.3f} |")
    a, b = np.abs(cap), np.abs(one)
    sm = rep.summary
    return lines + [
        "", f"speedup at the cap: |error| max {a.max():.3f}, mean {a.mean():.3f}, {int((a <= 0.05).sum())} of "
        f"{len(a)} within 0.05; at one clock max {b.max():.3f}, mean {b.mean():.3f}, {int((b <= 0.05).sum())} "
        f"within 0.05", f"kernel time at the cap: mean error {sm['kernel_time_mape']:.2f} % (worst "
        f"{sm['kernel_time_err_max']:.1f} %); SM clock: mean error {sm['clock_err_mean_percent']:.2f} % (worst "
        f"{sm['clock_err_max_percent']:.1f} %)",
        *([f"configs the law does not cover (at one clock): {', '.join(sm['configs_without_law'])}"]
          if sm["configs_without_law"] else [])]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default=PLATFORM)
    ap.add_argument("--moe-level", choices=moe.LEVELS, default="records",
                    help="each schedule's compute level as the report's --moe-level (predicted: the shared-HBM "
                         "pre-pass, whose tiles keep their HBM time at any clock)")
    ap.add_argument("--law", type=Path, help="fit the law on this file's duty records (default: the first steady "
                    "run's, else the platform's shipped ones); the output file's name says so")
    ap.add_argument("steady", nargs="*", type=Path)
    args = ap.parse_args(argv)
    shipped, out = outputs(args.platform, args.moe_level, args.law)
    paths = args.steady or shipped
    try:
        platform = resolve_platform(args.platform)
        runs = [(path, load_records([path])) for path in paths]
        law_rs = load_records([args.law]) if args.law else runs[0][1]
    except (OSError, RecordError, ProfileError) as exc:
        print(f"moe_clock_law: {exc}", file=sys.stderr)
        return 2
    law, notes = moe_clock_law_for(law_rs, platform.name)
    if law is None:
        print(f"moe_clock_law: {notes[0]}", file=sys.stderr)
        return 2
    lines = [f"# benchmarks/moe_clock_law.py on {platform.name}, {commit_note()}; the MoE law beta = "
             f"{law.beta:.3f} ({law.source}; {len(law.ceilings)} ceilings, {len(law.anchors)} anchors); "
             f"compute level {args.moe_level}"]
    for path, rs in runs:
        rep = moe.build(rs, platform, clock_law=law, level=args.moe_level)
        lines += ["", f"## {path.name}", "", *table(rep)]
    text = "\n".join(lines) + "\n"
    atomic_write(out, text, "result")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
