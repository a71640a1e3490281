"""The trickle loadgate sweep against a stall law: do loads progress only while the backlog is <= G?

Set A (66 CTAs) stores nothing and streams 2 MiB each while set C (66 CTAs) stores bursts of
V = 66 x b bytes, one every T us (``hwkernels.loadgate_plan.trickle_plan``). The shipped load gate
(link scope, threshold G) holds a load phase only when it starts; the stall law says a running
load phase makes progress only while the link's backlog q is at or below G. Below the link rate R
each burst drains before the next, q stays above G for (V - G) / R of every period T, and A's
load phase stretches from its base (nothing stored) to base / (1 - f), f = (V - G) / (R T). At
rates >= R the backlog grows until the stream ends: the law holds A until then (no number).

Beside the law, the DES's prediction of A's median load phase (calibration.loadgate's point model:
gate wait + base) with the shipped start gate and with the stall gate (mode "stall", scope and
threshold from one fit on the loadgate records, ``fit_gate(..., mode="stall")``; the trickle
records are never fitted).

    PYTHONPATH=. python benchmarks/loadgate_trickle.py [--records FILE] [--platform NAME]
writes benchmarks/results/loadgate_trickle.txt (atomically).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from calibration.loadgate import fit_gate, points, predicted  # noqa: E402
from calibration.records import load_records  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402
from xsim.simulate_point import default_engine  # noqa: E402
from xsim.units import gbps_to_bytes_per_us  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ROOT / "calibration" / "records" / "h200-pcie-host-loadgate-trickle.jsonl"
FIT_RECORDS = ROOT / "calibration" / "records" / "h200-pcie-host-loadgate.jsonl"
OUT = ROOT / "benchmarks" / "results" / "loadgate_trickle.txt"


def rows(records, rate_bytes_per_us: float, gate_bytes: float) -> tuple[float, list[dict]]:
    base = [r.stat("load_us", "median") for r in records if r.kind == "late"]
    if not base:
        raise SystemExit("no base point (kind late, set C storing nothing) in the records")
    base_us = sum(base) / len(base)
    out = []
    for r in records:
        if r.kind != "stream":
            continue
        p = r.params
        volume = p["late_ctas"] * p["late_bytes"]
        start, last = r.stat("late_start_at_us", "median"), r.stat("late_issued_at_us", "median")
        period = (last - start) / (p["late_bursts"] - 1)
        arrival = volume / period
        above = max(0.0, volume - gate_bytes) / rate_bytes_per_us
        f = above / period
        law = base_us / (1.0 - f) if arrival < rate_bytes_per_us and f < 1.0 else None
        measured = r.stat("load_us", "median")
        out.append({"b_kib": p["late_bytes"] // 1024, "spin_us": p["late_spin_us"], "volume_kb": volume / 1e3,
                    "period_us": period, "rate_gbps": arrival / 1e3, "above_us": above, "f": f,
                    "measured_us": measured, "p90_us": r.stat("load_us", "p90"), "law_us": law,
                    "err": None if law is None else law / measured - 1.0, "stream_end_us": last})
    return base_us, out


def des_columns(rs, data: list[dict], platform, stall_gate, engine: str) -> None:
    """Each row's DES median (us) with the platform's gate (``start_us``) and with ``stall_gate``."""
    by_record = {pt.where: pt for pt in points(rs)}
    streams = [r for r in rs.select("loadgate") if r.kind == "stream"]
    for d, r in zip(data, streams):
        pt = by_record[r.where]
        d["start_us"] = predicted(pt, platform, platform.load_gate, engine)[0]
        d["stall_us"] = predicted(pt, platform, stall_gate, engine)[0]


def _mape(data: list[dict], key: str) -> float:
    return 100.0 * sum(abs(d[key] / d["measured_us"] - 1.0) for d in data) / len(data)


def table(base_us: float, data: list[dict], rate_gbps: float, gate_bytes: float, where: str, stall_note: str) -> str:
    lines = [f"trickle loadgate sweep ({where}) against the stall law; R = {rate_gbps:.1f} GB/s, "
             f"G = {gate_bytes / 1e3:.1f} kB (the shipped profile); base (C stores nothing) {base_us:.1f} us",
             f"DES: A's median load phase with the shipped start gate and with the stall gate ({stall_note})",
             f"{'b':>4s} {'P us':>5s} {'V kB':>6s} {'T us':>6s} {'GB/s':>5s} {'q>G us':>7s} {'f':>5s} "
             f"{'A med':>7s} {'p90':>6s} {'law':>7s} {'err':>6s} {'start':>7s} {'stall':>7s} {'err':>6s}"]
    for d in data:
        law = "held" if d["law_us"] is None else f"{d['law_us']:.1f}"
        err = "" if d["err"] is None else f"{100 * d['err']:+.1f}%"
        stall_err = f"{100 * (d['stall_us'] / d['measured_us'] - 1.0):+.1f}%"
        lines.append(f"{d['b_kib']:3d}K {d['spin_us']:5.0f} {d['volume_kb']:6.0f} {d['period_us']:6.1f} "
                     f"{d['rate_gbps']:5.1f} {d['above_us']:7.1f} {d['f']:5.2f} {d['measured_us']:7.1f} "
                     f"{d['p90_us']:6.1f} {law:>7s} {err:>6s} {d['start_us']:7.1f} {d['stall_us']:7.1f} {stall_err:>6s}")
    below = [d for d in data if d["rate_gbps"] <= rate_gbps / 2 * 1.05]   # arrival R/4 .. R/2 (the law's range)
    lines.append(f"median MAPE on the {len(below)} points at R/4 .. R/2: start gate {_mape(below, 'start_us'):.1f} %, "
                 f"stall gate {_mape(below, 'stall_us'):.1f} %, stall law {_mape(below, 'law_us'):.1f} %; "
                 f"all {len(data)}: start {_mape(data, 'start_us'):.1f} %, stall {_mape(data, 'stall_us'):.1f} %")
    held = [d for d in data if d["law_us"] is None]
    if held:
        lines.append("held: arrival >= R, the backlog grows; A's load phase ends after the stream "
                     f"(last burst issued at {min(d['stream_end_us'] for d in held):.0f}-"
                     f"{max(d['stream_end_us'] for d in held):.0f} us)")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", default=str(RECORDS))
    ap.add_argument("--platform", default="h200-pcie-host")
    args = ap.parse_args(argv)
    platform = resolve_platform(args.platform)
    if platform.load_gate is None:
        raise SystemExit(f"platform {args.platform} has no load gate")
    rs = load_records([args.records])
    records = [r for r in rs.select("loadgate")]
    rate = platform.effective_drain_rate_gbps(1)
    base_us, data = rows(records, gbps_to_bytes_per_us(rate), platform.load_gate.threshold_bytes)
    engine = default_engine(platform)
    fit = fit_gate(load_records([str(FIT_RECORDS)]), platform, engine, mode="stall")
    des_columns(rs, data, platform, fit.gate, engine)
    commits = sorted({r.data.get("commit", "?")[:7] for r in records})
    stall_note = (f"{fit.gate.scope} {fit.gate.threshold_bytes / 1e3:.1f} kB, fitted once on {FIT_RECORDS.name}: "
                  f"RMS {100 * min(s.rms_rel_error for s in fit.scopes):.1f} % on {fit.n_fit} points")
    text = table(base_us, data, rate, platform.load_gate.threshold_bytes,
                 f"records at {', '.join(commits)}; {commit_note()}", stall_note)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=OUT.parent, prefix=".loadgate_trickle.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, OUT)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
