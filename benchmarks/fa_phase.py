"""Do staggered programs keep their phases wave after wave? And E_res in cycles, the clock out.

Run 12 staggered the fused kernel's programs by eq. 10's S* = 82.6 us (program p starts S p / K
late); the DES keeps those phases for the whole launch, and at one clock it predicts a residual
that falls with M (68 / 58 / 26 us at 16K / 32K / 64K) where the timed runs, corrected to one
clock, gave 122 / 192 / 769 us. ``hwkernels/fa_waves.py --stagger-us 0,design`` (run at
``08390f6``, ``calibration/records/logs/h200-pcie-host-fa-a2a/waves-stagger-08390f6/``: FA-only and
fused at M = 8K..64K, unstaggered and at S*, 2 stamped ring launches each, every slot checked)
stamps every tile's start (%globaltimer) and its Q-loop (%clock64).

Per launch this prints the phase keys of ``fa_waves.wave_stats`` (the first and last full wave's
start skew, p90 - p10 over the programs, and ``phase_kept``, the correlation of the programs'
start offsets in the last wave with those in the first) and the launch's length in cycles:
(last stores issued - first tile start) x the programs' median SM clock. FA-only's Q-loops are
compute bound, so its cycles do not move with the clock (the table shows them within 0.3 %
over clocks 1460-1710 MHz); fused minus FA-only in cycles, at FA-only's clock, is the residual
at one clock from the stamped launches, with no first-order scaling of the timed runs. Nothing
is fitted.

    PYTHONPATH=. python benchmarks/fa_phase.py    # writes benchmarks/results/fa_phase.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from xsim.fileio import atomic_write  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "calibration" / "records" / "logs" / "h200-pcie-host-fa-a2a" / "waves-stagger-08390f6"
OUT = ROOT / "benchmarks" / "results" / "fa_phase.txt"


def npz_key(r: dict) -> str:
    s = r["stagger_us"]
    return f"{r['variant']}_{r['seq_len']}_s{int(s) if s == int(s) else s}_{r['run']}"


def launch_mcycles(stamps: np.ndarray, clock_mhz: float) -> float:
    """The launch from its first tile's start to its last stores issued (%globaltimer), in
    millions of cycles at the programs' median clock."""
    st = np.asarray(stamps, dtype=np.int64)
    return float((st[:, 2].max() - st[:, 0].min()) / 1e3 * clock_mhz / 1e6)


def rows(run: Path = RUN) -> list[dict]:
    stamps = np.load(run / "fa-waves.npz")
    out = []
    for line in (run / "fa-waves.jsonl").read_text().splitlines():
        r = json.loads(line)
        if not r["ok"]:
            continue
        r["mcycles"] = launch_mcycles(stamps[npz_key(r)], r["clock_mhz"])
        out.append(r)
    return out


def table(rs: list[dict]) -> str:
    fa = {}
    for r in rs:
        if r["variant"] == "fa-only":
            fa.setdefault(r["seq_len"], []).append(r)
    lines = ["| M | variant | S (us) | run | waves | skew first / last (us) | phase_kept | MHz | Mcycles "
             "| minus FA-only, us at FA-only's clock |", "|" + " --- |" * 10]
    for r in sorted(rs, key=lambda r: (r["seq_len"], r["variant"] != "fa-only", r["stagger_us"], r["run"])):
        ref = fa[r["seq_len"]]
        cyc = float(np.mean([f["mcycles"] for f in ref]))
        mhz = float(np.mean([f["clock_mhz"] for f in ref]))
        kept = "-" if r["phase_kept"] is None else f"{r['phase_kept']:.2f}"
        extra = "" if r["variant"] == "fa-only" else f"{(r['mcycles'] - cyc) * 1e6 / mhz:.0f}"
        lines.append(f"| {r['seq_len']} | {r['variant']} | {r['stagger_us']:g} | {r['run']} | {r['waves']} "
                     f"| {r['start_skew_us_first']:.1f} / {r['start_skew_us_last']:.1f} | {kept} "
                     f"| {r['clock_mhz']:.0f} | {r['mcycles']:.4f} | {extra} |")
    spread = {m: (min(f["mcycles"] for f in v), max(f["mcycles"] for f in v)) for m, v in sorted(fa.items())}
    lines += ["", "FA-only's launch in Mcycles, min - max over its launches (the clock-invariance the "
              "last column rests on): " + ", ".join(f"{m}: {a:.4f} - {b:.4f}" for m, (a, b) in spread.items())]
    return "\n".join(lines)


def main() -> int:
    text = f"# benchmarks/fa_phase.py, {commit_note()}; records {RUN.relative_to(ROOT)}\n\n{table(rows())}\n"
    atomic_write(OUT, text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
