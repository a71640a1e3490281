"""When do the loads after a fence END? The three fence suites against the readings, at the loads' end.

``benchmarks/cc_fence.py --part late`` compares when set A's loads *start* (its fence's end). What a
completion-coupled attention kernel pays is when its next Q-loop's loads are done: the fence, then
the loads, which the host link's load gate may hold. Per fenced point of the ``fencelate``
(``ac6b139``), ``fencelate-heldout`` (``463485c``) and ``fencestream`` (``0c31c80``) runs
(``calibration/records/logs/h200-pcie-host-loadgate-<suite>-<commit>/``), this prints the median
over A's CTAs of the measured load end (from the grid barrier) beside the DES's under four
readings, each with the load phase's own length set to the suite's measured B = 0 reference for
that A (so only the waits are predicted): ``link``; ``own-eq`` (own bytes under equal drain
shares); ``own-eq+gate`` (that, then the platform's load gate, start mode, link scope); ``own+gate``
(the profile's drain weights, then the gate). Nothing is fitted.

    PYTHONPATH=. python benchmarks/cc_fence_ends.py    # writes benchmarks/results/cc_fence_ends.txt
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cc_fence as cf  # noqa: E402  benchmarks/ is the script's folder
from provenance import commit_note  # noqa: E402

from calibration.loadgate_model import LOAD  # noqa: E402
from hwkernels import loadgate_plan as plan  # noqa: E402
from xsim.des import simulate  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402

LOGS = cf.ROOT / "calibration" / "records" / "logs"
RUNS = {"fencelate": LOGS / "h200-pcie-host-loadgate-fencelate-ac6b139" / "fencelate",
        "fencelate-heldout": LOGS / "h200-pcie-host-loadgate-fencelate-heldout-463485c" / "fencelate-heldout",
        "fencestream": LOGS / "h200-pcie-host-loadgate-fencestream-0c31c80" / "fencestream"}
OUT = cf.ROOT / "benchmarks" / "results" / "cc_fence_ends.txt"
READINGS = ("link", "own-eq", "own-eq+gate", "own+gate")


def rows(platform) -> list[dict]:
    out = []
    for suite, base in RUNS.items():
        tr = np.load(f"{base}.npz")
        pts = [p for p in plan.SUITES[suite]() if p.variant in cf.FENCED_LATE and f"{p.key}__role" in tr]

        def a_of(key):
            return tr[f"{key}__role"] == cf.ROLE_A
        own_len = {p.store_ctas: float(np.median((tr[f"{p.key}__load_end_at_us"] - tr[f"{p.key}__load_start_at_us"])
                                                 [a_of(p.key)]))
                   for p in pts if p.burst_bytes == 0 and p.late_bytes == 0}
        for p in pts:
            if p.burst_bytes == 0:
                continue
            shape = dataclasses.replace(cf.late_shape(p), base_us=own_len[p.store_ctas])
            row = {"suite": suite, "key": p.key, "measured": float(np.median(tr[f"{p.key}__load_end_at_us"][a_of(p.key)]))}
            for r in READINGS:
                w = cf.fence_workload(shape, platform, r)
                row[r] = float(np.median(simulate(w, engine="fast", trace=False).times.mainloop_end[w.kind == LOAD]))
            out.append(row)
    return out


def table(rs: list[dict]) -> str:
    lines = ["Median over A's CTAs of when its loads end (us from the grid barrier), measured and per reading:", "",
             "| suite | point | measured | " + " | ".join(READINGS) + " |", "|" + " --- |" * (3 + len(READINGS))]
    for r in rs:
        lines.append(f"| {r['suite']} | {r['key']} | {r['measured']:.1f} | " + " | ".join(f"{r[x]:.1f}" for x in READINGS) + " |")
    lines += ["", "Mean / max relative error of the median load end, per suite and over all:"]
    for x in READINGS:
        cells = []
        for suite in list(RUNS) + ["all"]:
            e = [abs(r[x] / r["measured"] - 1) * 100 for r in rs if suite in ("all", r["suite"])]
            cells.append(f"{suite} {np.mean(e):.1f} / {max(e):.1f} %")
        lines.append(f"- {x}: " + "; ".join(cells))
    return "\n".join(lines)


def main() -> int:
    text = f"# benchmarks/cc_fence_ends.py on h200-pcie-host, {commit_note()}; DES engine fast\n\n" \
           f"{table(rows(resolve_platform('h200-pcie-host')))}\n"
    atomic_write(OUT, text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
