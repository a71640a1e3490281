"""The design test's stagger for the attention kernel, and what the DES predicts it does.

``xsim.attention.stagger.design_stagger`` applies eq. 10 to the aligned output wave of the
headline kernel (K = 132 programs, a 32 KB tile each) on the calibrated platform: when that wave
is above the knee a loading mainloop meets (the load gate on the host link), program p should
start S* p / K late, S* = K B_t / R. This prints the test and, per M of the headline (Gluon) series
of the shipped records, the DES's fused E_res with every program aligned, with S*, and with
run 11's 100 us, each at the launch-wide Q-loop spread (the report's DES) and at the within-wave
one (0.002, one SM clock: benchmarks/results/fa_wave_spread.txt). Nothing is fitted to the
staggered measurements; the stagger comes from the profile alone.

    PYTHONPATH=. python benchmarks/fa_stagger_design.py  # writes benchmarks/results/fa_stagger_design.txt
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from calibration.records import load_shipped_records  # noqa: E402
from xsim.attention.shape import drain_peers  # noqa: E402
from xsim.attention.stagger import design_stagger  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402
from xsim.report import fa_a2a  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "fa_stagger_design.txt"
ENGINE = "fast"
WAVE_CV = 0.002
RUN11_US = 100.0


def main() -> int:
    platform = resolve_platform("h200-pcie-host")
    rep = fa_a2a.build(load_shipped_records("fa-a2a", platform.name), platform)
    head = fa_a2a._headline(rep.series)
    shape0 = head.points[0].shape
    dest = head.key["destination"]
    d = design_stagger(platform, shape0.programs, shape0.tile_bytes, peers=drain_peers(dest, shape0.sp))
    staggers = (0.0, round(d.stagger_us, 1), RUN11_US)
    lines = [f"# The design test's stagger (xsim.attention.stagger) on {platform.name}, {commit_note()}",
             f"# aligned wave V = {shape0.programs} x {shape0.tile_bytes} B = {d.wave_bytes / 1e6:.3f} MB; knee "
             f"({d.knee}) {d.knee_bytes / 1e3:.1f} kB; eq. 10 capacity bound [V - R T_iss0]+ = "
             f"{d.aligned.q_peak_bytes / 1e6:.3f} MB: {'ok' if d.aligned.capacity_bound_ok else 'FAILS'}; "
             f"S* = V / R = {d.stagger_us:.1f} us",
             f"# DES ({ENGINE} engine) fused E_res per launch, us, on the headline series {dict(head.key)} "
             f"(Q-loop fit of its FA-only records); stagger: program p starts S p / K us late",
             "| M | cv | " + " | ".join(f"S = {s:g}" for s in staggers) + " |",
             "| ---: | ---: | " + " | ".join("---:" for _ in staggers) + " |"]
    for p in head.points:
        for cv in (head.qloop.cv, WAVE_CV):
            q = dataclasses.replace(head.qloop, cv=cv)
            e = [fa_a2a._des_residuals(p, q, platform, dest, ENGINE, stagger_us=s)["fused"] for s in staggers]
            lines.append(f"| {p.seq_len} | {cv:.4f} | " + " | ".join(f"{x:.1f}" for x in e) + " |")
    text = "\n".join(lines) + "\n"
    atomic_write(OUT, text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
