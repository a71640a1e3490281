"""The paper's Table 2 rows predicted on paper-8gpu from shapes alone (closed form and DES).

    PYTHONPATH=. /work/venv/bin/python benchmarks/moe_paper_table2.py [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from provenance import commit_note  # benchmarks/ is the script's folder

from xsim.report.moe_paper import paper_table2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    t0 = time.perf_counter()
    rows = paper_table2(des=True)
    wall = time.perf_counter() - t0
    f = lambda pair: "/".join(f"{x:.2f}" for x in pair)  # noqa: E731
    lines = [f"paper Table 2 (W8A8, Zipf 1.2, 55,808 tokens, EP 8) on paper-8gpu from shapes alone "
             f"({commit_note()}; {wall:.0f} s)",
             "spans wave/int medians (us); T_mma L2/L1; stall wave/int per tile (paper: pred/meas of each)",
             "DES: median / mean of the L2 tiles' staging-slot wait; '+mma': with the paper's measured mainloops",
             f"{'model':11s} {'paper span':>11s} {'closed':>11s} {'DES':>11s} {'DES+mma':>11s} | {'paper T_mma':>12s} "
             f"{'model':>11s} | {'paper wave':>10s} {'paper int':>10s} {'closed':>10s} {'closed+mma':>10s} "
             f"{'DES mean':>10s} {'DES+mma mn':>10s} | DES speedup, +mma"]
    for r in rows:
        lines.append(f"{r['model']:11s} {f(r['paper_span_us']):>11s} {f(r['closed_span_us']):>11s} "
                     f"{f(r['des_span_us']):>11s} {f(r['des_paper_mma_span_us']):>11s} | "
                     f"{f(r['paper_t_mma_us']):>12s} {f(r['model_t_mma_us']):>11s} | "
                     f"{f(r['paper_stall_wave_us']):>10s} {f(r['paper_stall_int_us']):>10s} "
                     f"{f(r['closed_stall_us']):>10s} {f(r['closed_paper_mma_stall_us']):>10s} "
                     f"{f(r['des_stall_mean_us']):>10s} {f(r['des_paper_mma_stall_mean_us']):>10s} | "
                     f"{r['des_speedup']:.3f}, {r['des_paper_mma_speedup']:.3f}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "moe_paper_table2.txt").write_text(text)
    (args.out / "moe_paper_table2.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
