"""The read law on the beside tables: do host stores in flight, slowing fast reads as the read microbenchmark
measured, account for the MoE mainloops' stretch that the calibrated load gate leaves out?

The law comes from ``hwkernels.read_beside`` records alone (``benchmarks/read_beside.py``): with 33 or more
SMs storing, a reader that reads r GB/s on its own keeps 1 - a(r) x rho of that rate while the link carries
rho of R. The slope is measured per group of readers (source, pacing, storer count: each its own rate), and
a(r) is the least-squares line through those (rate, a) points, clipped to [0, 1]. Applied tile by tile on the DES (start gate, as calibrated, with
trace): a Linear-2 mainloop that reads at its layer's local rate r (2 x 128 x K elements over the local
control's held time) and ran while the link was draining a share b of its time is stretched to
mainloop / (1 - a(r) b). That is the link's busy share during the tile in place of rho: the DES's drain
is all or nothing, and its mean over a window is that window's rho. First order: the stretch does not
move later tiles in the DES.

Per point: the measured L2 +us per tile (host minus local wait + mainloop), the start gate's, and the
gate's plus the law's; per config and over all points, the errors. Nothing is fitted to a beside record.

    PYTHONPATH=. python benchmarks/moe_beside_law.py [--platform NAME] [--reads READ.jsonl] [BESIDE.jsonl ...]
writes benchmarks/results/moe_beside_law_<platform>.txt.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from moe_beside import HINT, parse, points  # noqa: E402  benchmarks/ is the script's folder
from moe_beside_des import BELOW, _held, measured_load, point_inputs, simulate_table  # noqa: E402
from provenance import commit_note  # noqa: E402
from read_beside import cells, slope_points  # noqa: E402

from hwkernels.moe_beside import BESIDE, OWN, configs_named  # noqa: E402
from hwkernels.records import read_records  # noqa: E402
from xsim.builders.moe import without_link  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402
from xsim.moe.tiles import L2  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def read_law(read_recs: list[dict], rate_gbps: float):
    """(c0, c1, points): a(r) = clip(c0 + c1 r, 0, 1), least squares over the TMA readers' slopes at their
    own rates (L2-served and HBM alike: the map found the reader's rate, not its source, decides), and the
    (rate, a) points (ValueError with fewer than two rates)."""
    pts = sorted((rate, a) for (loads, *_), rate, _, a in slope_points(cells(read_recs, rate_gbps))
                 if loads == "tma")
    if len({round(r) for r, _ in pts}) < 2:
        raise ValueError("the read records give the slope at fewer than two reader rates")
    r, a = np.array(pts).T
    c1, c0 = np.polyfit(r, a, 1)
    return float(c0), float(c1), pts


def slope_at(law, rate: float) -> float:
    """a(r) of ``read_law``'s line, clipped to [0, 1]."""
    return float(np.clip(law[0] + law[1] * rate, 0.0, 1.0))


def busy_share(trace, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Each [start, end]'s share of time with the X-Stage draining (q > 0), from q(t)'s breakpoints."""
    t, q = np.asarray(trace[0], dtype=float), np.asarray(trace[1], dtype=float)
    busy = (q[:-1] > 0) | (q[1:] > 0)
    cum = np.concatenate([[0.0], np.cumsum(np.diff(t) * busy)])
    width = np.maximum(end - start, 1e-12)
    return np.clip((np.interp(end, t, cum) - np.interp(start, t, cum)) / width, 0.0, 1.0)


def law_row(cfg, pattern: str, k: int, by: dict, platform, sms: int, law) -> dict:
    host, loc = by["host"], by["local"]
    table, lay, local, cv = point_inputs(cfg, pattern, k, loc, sms)
    s = cfg.shape
    w, res = simulate_table(table, s, lay, platform, local, cv, 0, trace=True)
    _, base = simulate_table(table, s, lay, without_link(platform), local, cv, 0)
    l2 = w.kind == L2
    t, tb = res.times, base.times
    ml = (t.mainloop_end - t.mainloop_start)[l2]
    held = float(np.mean(t.gate_wait_us[l2] + ml))
    held_base = float(np.mean((tb.gate_wait_us + tb.mainloop_end - tb.mainloop_start)[l2]))
    rate = 2 * s.block_m * s.intermediate * s.element_bytes / local["l2"] / 1e3 if local["l2"] > 0 else math.nan
    a = slope_at(law, rate)
    b = busy_share(res.traces[0], t.mainloop_start[l2], t.mainloop_end[l2])
    stretch = float(np.mean(ml * (1.0 / (1.0 - a * b) - 1.0)))
    return {"config": cfg.name, "pattern": pattern, "k": k, "load": measured_load(host, platform), "rate": rate,
            "a": a, "busy": float(np.mean(b)), "measured": _held(host, "l2") - _held(loc, "l2"),
            "start": held - held_base, "law": held - held_base + stretch}


def summary(rs: list[dict]) -> list[str]:
    out = []
    for what in ("start", "law"):
        err = np.array([r[what] - r["measured"] for r in rs])
        out.append(f"L2 +us per tile, DES {what} minus measured over {len(err)} points: mean {err.mean():+.2f}, "
                   f"mean |err| {np.abs(err).mean():.2f}, worst {err[np.argmax(np.abs(err))]:+.2f}")
    out += ["", f"Per config, below saturation (load {BELOW[0]}-{BELOW[1]} of R), mean L2 +us per tile", "",
            "| config | read GB/s | a | points | busy | measured | start gate | gate + law |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in sorted({r["config"] for r in rs}):
        sel = [r for r in rs if r["config"] == name and BELOW[0] <= r["load"] <= BELOW[1]]
        if sel:
            m = {key: np.mean([r[key] for r in sel]) for key in ("rate", "a", "busy", "measured", "start", "law")}
            out.append(f"| {name} | {m['rate']:.1f} | {m['a']:.2f} | {len(sel)} | {m['busy']:.2f} | "
                       f"{m['measured']:.1f} | {m['start']:.1f} | {m['law']:.1f} |")
    return out


def main(argv=None) -> int:
    def reads(ap):
        ap.add_argument("--reads", type=Path, default=None, help="read-beside records (default: the platform's)")

    parsed = parse("moe_beside_law", __doc__, argv, reads, platform="h100-pcie-host")
    if parsed is None:
        return 2
    args, platform, recs, paths = parsed
    read_path = args.reads or ROOT / "calibration" / "records" / f"{args.platform}-read-beside.jsonl"
    try:
        law = read_law(read_records(read_path), platform.drain_rate_gbps)
    except (OSError, ValueError) as e:
        print(f"moe_beside_law: {e}", file=sys.stderr)
        return 2
    pts = {key: by for key, by in points(recs).items() if {"host", "local"} <= set(by) and HINT not in key[0]}
    names = sorted({key[0] for key in pts})
    configs = dict(zip(names, configs_named(names)))
    rs = []
    for (name, pattern, k), by in sorted(pts.items()):
        sms = int(by["host"]["params"]["programs"])
        if pattern == OWN or (pattern == BESIDE and 1 <= k < sms):
            rs.append(law_row(configs[name], pattern, k, by, platform, sms, law))
    rows = [f"| {r['config']} | {r['pattern']} | {r['k']} | {r['load']:.2f} | {r['rate']:.1f} | {r['busy']:.2f} | "
            f"{r['measured']:.1f} | {r['start']:.1f} | {r['law']:.1f} |" for r in rs]
    lines = [f"The read law on the beside tables, {args.platform} (from {read_path.name}: a(r) = {law[0]:+.3f} "
             f"{law[1]:+.4f} r, clipped to [0, 1], over " + ", ".join(f"{a:.2f} at {r:.0f}" for r, a in law[2])
             + f" GB/s; beside records of {', '.join(sorted({r.get('commit', '?') for r in recs}))}); {commit_note()}",
             "", *summary(rs), "", "| config | pattern | k | load | read GB/s | busy | L2 +us measured | start gate | "
             "gate + law |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", *rows]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    atomic_write(ROOT / "benchmarks" / "results" / f"moe_beside_law_{args.platform}.txt", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
