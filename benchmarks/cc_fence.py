"""What does a system-scope fence wait for on the host link? The fence microbenchmark, then FA+A2A's cc.

Six readings of a CTA's fence after its posted host stores (docs/fa-a2a-report.md, "What a
system-scope fence waits for"):

- ``link``: until the X-Stage is empty: every CTA's bytes, also those accepted while it waits
  (the ``fa_a2a`` builder's ``cc_fence = "link"``, a threshold-0 link gate on the next mainloop);
- ``fifo``: until the stage has drained what it had accepted when the fence began (``"fifo"``);
- ``own``: until the CTA's own bytes have drained (``"own"``, completion coupling: the engines'
  weighted drain gives each CTA its share, so favoured CTAs finish early; on a microbenchmark
  point only set A fences, set C's streams never do);
- ``fifo+gate``: ``fifo``, then the next mainloop's loads held by the platform's load gate (link
  scope, 328.9 kB), as in the fused kernel (``"fifo+gate"``, the gate scope ``fifo-link``);
- ``own-eq``: ``own`` with every CTA's drain share equal (the profile's per-SM weights set to 1;
  ``"own-eq"``);
- ``own+gate``: ``own``, then the next mainloop's loads held by the platform's load gate (link
  scope, 328.9 kB) as in the fused kernel. Not a builder option: here the workload is rewritten
  (X-Stage coupling, the platform gate, and a per-tile counter that each tile signals when its
  own bytes have drained and the CTA's next tile waits for).

Part 1, the ``fence`` points of the loadgate suite (``hwkernels/loadgate_bench.py``: K CTAs store
B bytes each at once after a grid barrier, ``fence.sc.sys``, then load 256 KiB;
``calibration/records/h200-pcie-host-loadgate.jsonl`` and the per-CTA traces): when each CTA's
fence ends and its loads start (from the barrier: stores issued + fence wait; 20 launches x K
CTAs) against when the DES's load phase starts (the loadgate point model,
:mod:`calibration.loadgate_model`) under each reading, and the load phase after the fence
(measured: at the B = 0 speed). Part 2, the fa-a2a report's cc variant
(``xsim report --experiment fa-a2a --cc-fence X``): the DES's E_cc per M under each reading and
the report's errors. Nothing is fitted: the platform is the shipped profile.

Part 3 (``--part late``), the points that tell ``link`` from ``fifo+gate`` on their own: the
``fencelate`` suite (``hwkernels/loadgate_plan.py``: set A stores, fences, loads; set C stores D us
after the barrier, while A's fences wait). Without ``--late-records`` it prints each reading's
prediction of when A's loads start (committed before the suite ran:
``benchmarks/results/cc_fence_late.txt``); with the records and their traces, the measured start
(A's CTAs: stores issued + fence wait) beside them.

    PYTHONPATH=. python benchmarks/cc_fence.py [--part micro|fa|all]
writes benchmarks/results/cc_fence.txt (atomically);
    PYTHONPATH=. python benchmarks/cc_fence.py --part late [--late-records R.jsonl --late-traces T.npz]
writes benchmarks/results/cc_fence_late.txt.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from calibration.fidelity import mape_percent  # noqa: E402
from calibration.loadgate_model import LOAD, Shape, workload  # noqa: E402
from calibration.records import load_records, load_shipped_records  # noqa: E402
from xsim.builders import fa_a2a as builder  # noqa: E402
from xsim.des import simulate  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402
from xsim.load_gate import LoadGate  # noqa: E402
from xsim.params import resolve  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402
from xsim.report import fa_a2a  # noqa: E402
from xsim.workload import Workload  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ROOT / "calibration" / "records" / "h200-pcie-host-loadgate.jsonl"
TRACES = ROOT / "calibration" / "records" / "h200-pcie-host-loadgate-traces.npz"
OUT = ROOT / "benchmarks" / "results" / "cc_fence.txt"
ROLE_A = 0   # hwkernels.loadgate_kernels.ROLE_STORE_LOAD: a CTA of set A
FENCED_LATE = ("late-fence", "stream-fence")
LATE_SUITES = {"fencelate": "cc_fence_late.txt", "fencelate-heldout": "cc_fence_late_heldout.txt",
               "fencestream": "cc_fence_stream.txt"}
READINGS = builder.CC_FENCES + ("own+gate",)   # the builder's, then one this script builds
BASE_US = 1.0   # the DES's load phase without a gate (only when the loads start is compared)


def own_then_gate(w: Workload, gate: LoadGate | None, fencing: range | None = None) -> Workload:
    """``w`` as X-Stage coupling with ``gate``, each tile of a ``fencing`` producer (default:
    every producer) followed by the CTA's next tile only once a counter the tile signals when
    its own bytes have drained says so (where neither already has a counter: a kernel
    boundary's drain signal covers it). Producers not fencing issue as X-Stage coupling does."""
    sig, wc, wv = w.signal_counter.copy(), w.wait_counter.copy(), w.wait_value.copy()
    on_drain = w.signal_on_drain.copy()
    n = w.n_counters
    for p in range(w.n_producers) if fencing is None else fencing:
        for j in range(w.offsets[p], w.offsets[p + 1] - 1):
            if sig[j] < 0 and wc[j + 1] < 0:
                sig[j], on_drain[j], wc[j + 1], wv[j + 1] = n, True, n, 1
                n += 1
    return dataclasses.replace(w, coupling="xstage", load_gate=gate, signal_counter=sig, wait_counter=wc,
                               wait_value=wv, signal_on_drain=on_drain, n_counters=n)


def fence_workload(shape: Shape, platform, reading: str) -> Workload:
    if reading in ("link", "fifo"):
        return workload(shape, platform, LoadGate(0.0, reading))
    if reading == "fifo+gate":
        return workload(shape, platform, LoadGate(platform.load_gate.threshold_bytes, "fifo-link"))
    return MICRO_OWN[reading](workload(shape, platform, None), platform, range(shape.storers))


def micro_rows(platform, engine: str) -> list[dict]:
    rs = load_records([str(RECORDS)])
    traces = np.load(TRACES)
    rate = platform.effective_drain_rate_gbps(1) * 1e3   # bytes per us
    fences = [r for r in rs.select("loadgate") if r.params.get("variant") == "fence" and r.params["ctas"] > 1]
    base = {r.params["ctas"]: r.stat("load_us", "median") for r in fences if r.params["burst_bytes"] == 0}
    rows = []
    for r in fences:
        p = r.params
        if p["burst_bytes"] == 0:
            continue
        key = f"fence_K{p['ctas']}_B{p['burst_bytes'] // 1024}K_L{p['load_bytes'] // 1024}K"
        end = (traces[key + "__issued_at_us"] + traces[key + "__wait_us"]).ravel()
        row = {"k": p["ctas"], "b": p["burst_bytes"], "v_over_r": p["ctas"] * p["burst_bytes"] / rate,
               "measured": np.percentile(end, [10, 50, 90]), "load": r.stat("load_us", "median"),
               "base": base[p["ctas"]]}
        shape = Shape(storers=p["ctas"], burst_bytes=float(p["burst_bytes"]), base_us=BASE_US)
        for reading in READINGS:
            w = fence_workload(shape, platform, reading)
            t = simulate(w, engine=engine, trace=False).times
            row[reading] = np.percentile(t.mainloop_start[w.kind == LOAD], [10, 50, 90])   # the loads start
        rows.append(row)
    return rows


def micro_table(rows: list[dict]) -> str:
    head = "| K x B | V/R | measured p10 / p50 / p90 | " + " | ".join(READINGS) + " |"
    lines = ["When each CTA's loads start after its fence (us from the barrier; measured: stores issued + fence "
             "wait, p10 / median / p90 over 20 launches x K CTAs; DES: its next mainloop's start):", "",
             head, "|" + " --- |" * (3 + len(READINGS))]
    fmt = "{:.1f} / {:.1f} / {:.1f}".format
    for r in rows:
        lines.append(f"| {r['k']} x {r['b'] // 1024} KiB | {r['v_over_r']:.1f} | {fmt(*r['measured'])} | "
                     + " | ".join(fmt(*r[x]) for x in READINGS) + " |")
    lines += ["", "MAPE over the points of the loads' start, p10 / median / p90 (measured vs DES):"]
    for x in READINGS:
        errs = [mape_percent([r[x][i] for r in rows], [r["measured"][i] for r in rows]) for i in range(3)]
        lines.append(f"- {x}: {errs[0]:.1f} / {errs[1]:.1f} / {errs[2]:.1f} %")
    lines += ["", "Load phase after the fence, measured median (us), against the same loads with nothing stored "
              "(B = 0): the loads run at their own speed once the fence ends (the DES's load phase is its base):"]
    for k in sorted({r["k"] for r in rows}):
        mine = [r for r in rows if r["k"] == k]
        lines.append(f"- K = {k}: " + ", ".join(f"{r['b'] // 1024} KiB {r['load']:.1f}" for r in mine)
                     + f" (B = 0: {mine[0]['base']:.1f})")
    return "\n".join(lines)


def equal_shares(w: Workload) -> Workload:
    """``w`` with every producer's drain weight 1 (the link's arbitration without the profile's
    per-SM weights)."""
    return dataclasses.replace(w, producer_weight=np.ones(w.n_producers))


SCRIPT_READINGS = {"own+gate": lambda w, plat: own_then_gate(w, plat.load_gate)}   # rewrites of own, here only
# The own readings of a microbenchmark point: only set A (the storers that load after it) fences;
# set C's streams never do, so its bursts issue as the X-Stage accepts them.
MICRO_OWN = {"own": lambda w, plat, a: own_then_gate(w, None, a),
             "own-eq": lambda w, plat, a: own_then_gate(equal_shares(w), None, a),
             "own+gate": lambda w, plat, a: own_then_gate(w, plat.load_gate, a),
             "own-eq+gate": lambda w, plat, a: own_then_gate(equal_shares(w), plat.load_gate, a)}


def cc_rewritten(series, platform, engine: str, reading: str) -> dict:
    """E_cc per M of one report series under a script-only reading (the report's own DES inputs)."""
    q = series.qloop
    out = {}
    for p in series.points:
        s = p.shape
        params = resolve(builder.PARAMS, {
            "variant": "cc", "cc_fence": "own", "seq_len": s.seq_len, "batch": s.batch, "heads": s.heads, "sp": s.sp,
            "head_dim": s.head_dim, "block_m": s.block_m, "block_n": s.block_n, "producers": s.producers,
            "destination": series.key["destination"], "sigma_us_per_kv_tile": q.sigma_us_per_kv_tile,
            "qloop_fixed_us": q.fixed_us, "qloop_cv": q.cv, "replays": fa_a2a.DES_REPLAYS,
            "stagger_us": float(series.key.get("stagger_us", 0.0))}, "cc_fence")
        w = SCRIPT_READINGS[reading](builder.build(params, platform), platform)
        out[p.seq_len] = builder.summarize(simulate(w, engine=engine, trace=False), params)["e_res_us"]
    return out


def _series_name(s) -> str:
    k = s.key
    return f"{k.get('mainloop', 'triton')}, stagger {float(k.get('stagger_us', 0.0)):g} us"


def fa_table(platform, engine: str) -> str:
    rs = load_shipped_records("fa-a2a", platform.name)
    reps = {f: fa_a2a.build(rs, platform, engine=engine, cc_fence=f) for f in builder.CC_FENCES}
    full = [i for i, s in enumerate(reps["link"].series) if len(s.points) >= 10]
    extra = {x: {i: cc_rewritten(reps["link"].series[i], platform, engine, x) for i in full} for x in SCRIPT_READINGS}
    head = max(full, key=lambda i: len(reps["link"].series[i].points))
    pts = reps["link"].series[head].points
    lines = [f"E_cc = T_cc - T_FA per M (us), series {_series_name(reps['link'].series[head])}: measured (cc-asm), "
             "closed form, DES under each reading:", "",
             "| M | measured | CF | " + " | ".join(READINGS) + " |", "|" + " --- |" * (3 + len(READINGS))]
    for j, p in enumerate(pts):
        des = [reps[f].series[head].points[j].predicted["des"]["e_cc_us"] for f in builder.CC_FENCES]
        des += [extra[x][head][p.seq_len] for x in SCRIPT_READINGS]
        lines.append(f"| {p.seq_len} | {p.e_cc_us:.1f} | {p.predicted['closed-form']['e_cc_us']:.1f} | "
                     + " | ".join(f"{d:.1f}" for d in des) + " |")
    lines += ["", "cc_time_mape (DES) per shipped series and reading (script-only readings computed here the same "
              "way; the closed form beside):", "",
              "| series | closed form | " + " | ".join(READINGS) + " |", "|" + " --- |" * (2 + len(READINGS))]
    for i in full:
        s = reps["link"].series[i]
        t_fa, t_cc = [p.get("fa-only") for p in s.points], [p.get("cc") for p in s.points]
        cells = [reps[f].series[i].summary["errors"]["des"]["cc_time_mape"] for f in builder.CC_FENCES]
        cells += [mape_percent([a + extra[x][i][p.seq_len] for a, p in zip(t_fa, s.points)], t_cc)
                  for x in SCRIPT_READINGS]
        lines.append(f"| {_series_name(s)} | {s.summary['errors']['closed-form']['cc_time_mape']:.2f} | "
                     + " | ".join(f"{c:.2f}" for c in cells) + " |")
    return "\n".join(lines)


def late_shape(p) -> Shape:
    """A fencelate point (a Point, or a record's params as a namespace) as the loadgate model's shape."""
    return Shape(storers=p.store_ctas, burst_bytes=float(p.burst_bytes), base_us=BASE_US, late_ctas=p.late_ctas,
                 late_bytes=float(p.late_bytes), late_delay_us=p.late_delay_us, late_bursts=p.late_bursts,
                 late_spin_us=p.late_spin_us)


def late_rows(platform, engine: str, records: str | None = None, traces: str | None = None,
              suite: str = "fencelate") -> list[dict]:
    from hwkernels import loadgate_plan as plan   # pure data: the suite's points, no GPU

    measured = {}
    if records:
        tr = np.load(traces)
        for r in load_records([records]).select("loadgate"):
            v = r.params.get("variant")
            if v not in FENCED_LATE:   # failed checks are skipped on load
                continue
            key = plan.Point(v, r.params["ctas"], r.params["burst_bytes"], r.params["load_bytes"],
                             storers=r.params["producers"], late_bytes=r.params["late_bytes"],
                             late_delay_us=r.params["late_delay_us"], late_bursts=r.params["late_bursts"],
                             late_spin_us=r.params["late_spin_us"]).key
            a = tr[key + "__role"] == ROLE_A
            measured[key] = np.percentile((tr[key + "__issued_at_us"] + tr[key + "__wait_us"])[a], [10, 50, 90])
    rate = platform.effective_drain_rate_gbps(1) * 1e3
    rows = []
    for pt in plan.SUITES[suite]():
        if pt.variant not in FENCED_LATE or pt.burst_bytes == 0:
            continue
        row = {"key": pt.key, "a": pt.store_ctas, "b": pt.burst_bytes, "c": pt.late_ctas * pt.late_bytes * pt.late_bursts,
               "d": pt.late_delay_us, "every": f", {pt.late_bursts} bursts {pt.late_spin_us:g} us apart"
               if pt.late_bursts > 1 else "", "v_over_r": pt.store_ctas * pt.burst_bytes / rate, "measured": measured.get(pt.key)}
        for reading in READINGS:
            w = fence_workload(late_shape(pt), platform, reading)
            t = simulate(w, engine=engine, trace=False).times
            row[reading] = np.percentile(t.mainloop_start[w.kind == LOAD], [10, 50, 90])
        rows.append(row)
    return rows


def late_table(rows: list[dict]) -> str:
    fmt = "{:.1f} / {:.1f} / {:.1f}".format
    lines = ["When set A's loads start after its fence (us from the barrier, p10 / median / p90 over A's CTAs), "
             "C's bytes accepted while A's fences wait:", "",
             "| A x B | C's total (kB), from D us | A's V/R | measured | " + " | ".join(READINGS) + " |",
             "|" + " --- |" * (4 + len(READINGS))]
    for r in rows:
        m = "-" if r["measured"] is None else fmt(*r["measured"])
        lines.append(f"| {r['a']} x {r['b'] // 1024} KiB | {r['c'] / 1e3:.0f}, {r['d']:g}{r['every']} | {r['v_over_r']:.1f} | {m} | "
                     + " | ".join(fmt(*r[x]) for x in READINGS) + " |")
    done = [r for r in rows if r["measured"] is not None]
    if done:
        lines += ["", "MAPE of the loads' start over the measured points, p10 / median / p90:"]
        for x in READINGS:
            e = [mape_percent([r[x][i] for r in done], [r["measured"][i] for r in done]) for i in range(3)]
            lines.append(f"- {x}: {e[0]:.1f} / {e[1]:.1f} / {e[2]:.1f} %")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("micro", "fa", "all", "late"), default="all")
    ap.add_argument("--late-records", default=None, help="fencelate records (JSONL), with --late-traces")
    ap.add_argument("--late-traces", default=None, help="their per-CTA traces (.npz)")
    ap.add_argument("--late-suite", choices=sorted(LATE_SUITES), default="fencelate",
                    help="--part late: which suite (each writes its own results file)")
    ap.add_argument("--platform", default="h200-pcie-host")
    args = ap.parse_args(argv)
    platform = resolve_platform(args.platform)
    engine = "fast"
    parts = [f"# benchmarks/cc_fence.py on {platform.name}, {commit_note()}; DES engine {engine}"]
    if args.part == "late":
        if bool(args.late_records) != bool(args.late_traces):
            ap.error("--late-records and --late-traces go together")
        parts.append(late_table(late_rows(platform, engine, args.late_records, args.late_traces, args.late_suite)))
        text = "\n\n".join(parts) + "\n"
        atomic_write(ROOT / "benchmarks" / "results" / LATE_SUITES[args.late_suite], text)
        print(text, end="")
        return 0
    if args.part in ("micro", "all"):
        parts.append(micro_table(micro_rows(platform, engine)))
    if args.part in ("fa", "all"):
        parts.append(fa_table(platform, engine))
    text = "\n\n".join(parts) + "\n"
    if args.part == "all":
        atomic_write(OUT, text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
