"""Does the power cap's clock law, fitted on FlashAttention, carry over to the fused MoE kernel? (issue 10)

The law (``calibration.power``, fitted once on FA-only with store and idle gaps: f proportional to
u^-beta under the cap, beta 0.301) says a kernel that computes the same cycles in less time draws
more power and clocks lower. Interleaving is exactly that: the same tiles, fewer bubbles. If both
schedules sit at the cap and compute-bound, the law in ratio form predicts the interleaved clock
over the wave's as S1^-beta and the steady speedup as S1^(1 - beta), where S1 is the speedup at one
clock. Every input is measured: S1 from the burst run with CLK (``repeats/h200-pcie-host-moe-clock-24fb8c8.jsonl.gz``,
both schedules within 2 % of one clock: the wave time over the interleaved time at the wave's clock),
the steady clocks and speedups from ``repeats/h200-pcie-host-moe-kernels-steady-5896436.jsonl.gz``
(``moe_bench --steady-s 0.2``) and its repeat at ``53668b2``, run after this comparison was first
written and committed (the same command). ``beta needed`` = ln(f_wave / f_int) / ln(S1) is what the steady run
itself would ask for (a diagnostic, never used to predict). The prediction from shapes: the shipped
report's DES speedup (a fixed clock, the compute model of the burst mainloop records) to the power
S_DES^(1 - beta), beside the measured steady speedup.

    PYTHONPATH=. python benchmarks/moe_clock_law_transfer.py   # writes benchmarks/results/moe_clock_law_transfer.txt
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from moe_clock import clocked  # noqa: E402  benchmarks/ is the script's folder
from provenance import commit_note  # noqa: E402

from calibration.power import shipped_clock_law  # noqa: E402
from calibration.records import load_records  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402
from xsim.report import moe  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REPEATS = ROOT / "calibration" / "records" / "repeats"
BURST = REPEATS / "h200-pcie-host-moe-clock-24fb8c8.jsonl.gz"
STEADY = {"5896436": REPEATS / "h200-pcie-host-moe-kernels-steady-5896436.jsonl.gz",        # the first steady run
          "53668b2": REPEATS / "h200-pcie-host-moe-kernels-steady-repeat-53668b2.jsonl.gz"}  # after this was written
OUT = ROOT / "benchmarks" / "results" / "moe_clock_law_transfer.txt"


def table(law, burst: dict, steady: dict, des: dict) -> list[str]:
    lines = ["| config | S1 (burst, one clock) | steady MHz wave / int | clock ratio measured | law | "
             "steady speedup measured | law S1^(1-beta) | error | beta needed | DES | DES^(1-beta) | error | "
             "DES error at a fixed clock |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    errs, needed, ratio_err, des_err, fixed_err = [], [], [], [], []
    for config in sorted(set(burst) & set(steady)):
        (tw, fw), (ti, fi) = burst[config]["wave"], burst[config]["interleaved"]
        s1 = tw / (ti * fi / fw)
        (sw, gw), (si, gi) = steady[config]["wave"], steady[config]["interleaved"]
        measured, ratio = sw / si, gi / gw
        pred_ratio, pred = s1 ** -law.beta, s1 ** (1 - law.beta)
        need = math.log(gw / gi) / math.log(s1) if s1 > 1.02 else math.nan
        errs.append(pred - measured)
        d = des[config]
        des_err.append(d ** (1 - law.beta) - measured)
        fixed_err.append(d - measured)
        ratio_err.append(pred_ratio - ratio)
        if math.isfinite(need):
            needed.append(need)
        lines.append(f"| {config.removeprefix('moe1-')} | {s1:.3f} | {gw:.0f} / {gi:.0f} | {ratio:.3f} | "
                     f"{pred_ratio:.3f} | {measured:.3f} | {pred:.3f} | {pred - measured:+.3f} | {need:.2f} | {d:.3f} | "
                     f"{d ** (1 - law.beta):.3f} | {des_err[-1]:+.3f} | {fixed_err[-1]:+.3f} |")
    a, b, c = np.abs(errs), np.abs(des_err), np.abs(fixed_err)
    return lines + [
        "", f"steady speedup by the FA law from the measured S1: |error| max {a.max():.3f}, mean {a.mean():.3f}, "
        f"{int((a <= 0.05).sum())} of {len(a)} within 0.05",
        f"from the DES (predicted from shapes): with the law max {b.max():.3f}, mean {b.mean():.3f}, "
        f"{int((b <= 0.05).sum())} of {len(b)} within 0.05; at a fixed clock max {c.max():.3f}, mean "
        f"{c.mean():.3f}, {int((c <= 0.05).sum())} of {len(c)} within 0.05",
        f"clock ratio: law minus measured median {np.median(ratio_err):+.3f}, max {max(ratio_err):+.3f}",
        f"beta needed (configs with S1 > 1.02): median {np.median(needed):.2f}, range "
        f"{min(needed):.2f} .. {max(needed):.2f} against FA's {law.beta:.3f}"]


def main() -> int:
    law = shipped_clock_law("h200-pcie-host")
    platform = resolve_platform("h200-pcie-host")
    burst = clocked(load_records([BURST]), "kernel")
    lines = [f"# benchmarks/moe_clock_law_transfer.py on h200-pcie-host, {commit_note()}; FA's law beta = "
             f"{law.beta:.3f} ({law.source})"]
    for commit, path in STEADY.items():
        rs = load_records([path])
        des = {r.config: r.speedup_predicted for r in moe.build(rs, platform, level="records").rows}
        lines += ["", f"## steady run at {commit} ({path.name})", "", *table(law, burst, clocked(rs, "kernel"), des)]
    text = "\n".join(lines) + "\n"
    atomic_write(OUT, text, "result")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
