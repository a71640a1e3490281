"""Issue 8's shared barrier backlog, first-order: what would it do to the micro report's errors?

Over PCIe an aligned burst issues for 13.3 us after short gaps but 7.45 us after long ones (K =
132, B = 32 KiB) while the period stays V/R (docs/calibration.md, "Tails"). The reading: the grid
barrier's atomic gets through once the CTA's stores have reached the link's shared FIFO, while
about S bytes are still on the link, and the next burst's stores queue behind those S bytes
first come, first served. The DES's barrier waits for the whole drain instead.

This script does not change the DES. It takes its timeline and applies the first-order effect of
a shared FIFO of S bytes: where the barrier of burst j waited for the drain (its release, the
last arrival, is after the last gap end, the arrival condition being ``max(gap end + latency,
drain end)``), the hardware's barrier releases up to S / R earlier, at
``max(last gap end, last drain end - S / R)`` (the link drains the last S bytes at R). Burst
j + 1 starts that much earlier on every CTA (the stores sit in the FIFO behind the residual), and
its issue ends when it did (its drain still starts when the residual is gone), so every CTA's
issue of burst j + 1 is longer by ``e_j = clip(release_j - last gap end_j, 0, S / R)`` and the
period moves only where e changes. A burst that fits its producer's room (B <= Q(K) / K) does not
wait for the drain: it moves earlier whole (issue unchanged). S is one parameter per platform, chosen on the DES's
training points (the K = 132, B = 32 KiB series and isolated bursts), then the held-out errors
are compared with S = 0 (the shipped model).

    PYTHONPATH=. python benchmarks/barrier_residual.py --platform h200-pcie-host [--residual-kb 0,100,200,300,400]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from xsim.builders import microbench
from xsim.des.result import SimResult

_RESIDUAL = {"bytes": 0.0}
_summarize = microbench.summarize


def shifted(result: SimResult, residual_bytes: float) -> SimResult:
    """The result with every aligned burst's issue start moved earlier by e_j (see the module)."""
    w, t = result.workload, result.times
    names = w.kind_names
    if residual_bytes <= 0 or "gap" not in names or w.n_counters == 0:
        return result
    gap, burst = w.kind == names.index("gap"), w.kind == names.index("burst")
    n = int(w.burst_index.max()) + 1
    gap_end, release = np.full(n, -np.inf), np.full(n, -np.inf)
    np.maximum.at(gap_end, w.burst_index[gap], t.mainloop_end[gap])
    np.maximum.at(release, w.burst_index[gap], t.drain_end[gap])
    hold_us = residual_bytes / w.xstages[0].drain_bytes_per_us
    early = np.clip(release - gap_end, 0.0, hold_us)               # e_j: burst j + 1 starts this much earlier
    start, end = t.issue_start.copy(), t.issue_end.copy()
    later = burst & (w.burst_index > 0)
    shift = early[w.burst_index[later] - 1]
    start[later] -= shift
    room = w.xstages[0].capacity_bytes / w.n_producers      # each producer's share Q(K) / K
    fits = later.copy()
    fits[later] = w.bytes[later] <= room
    end[fits] -= shift[w.bytes[later] <= room]              # a burst that fits its room does not wait
    times = type(t)(**{**t.columns(), "issue_start": start, "issue_end": end})
    return SimResult(workload=w, times=times, traces=result.traces, engine=result.engine,
                     drained_bytes=result.drained_bytes)


def _patched_summarize(result, params):
    if params["aligned"] and params["barrier_waits_drain"] and not params["barrier_fence"]:
        result = shifted(result, _RESIDUAL["bytes"])
    return _summarize(result, params)


def errors(platform_name: str, residual_bytes: float) -> dict:
    from calibration.records import load_shipped_records
    from xsim.commands.report import _trace_tails
    from xsim.platform import resolve_platform
    from xsim.report import micro

    _RESIDUAL["bytes"] = residual_bytes
    microbench.summarize = _patched_summarize
    try:
        platform = resolve_platform(platform_name)
        rep = micro.build(load_shipped_records(platform=platform.name), platform, des=True,
                          trace_tails=_trace_tails(platform))
    finally:
        microbench.summarize = _summarize
    s = rep.summary
    pick = lambda e: {k: e["all"][k] for k in ("period_mape", "issue_mean_mape", "issue_p90_mape", "issue_max_mape")} | {  # noqa: E731
        "aligned_issue_mean_mape": e["aligned"]["issue_mean_mape"], "n_points": e["all"]["n_points"]}
    return {"residual_kb": residual_bytes / 1e3, "heldout": pick(s["heldout_errors_percent"]["des"]),
            "train": pick(s["train_errors_percent"]["des"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="h200-pcie-host")
    parser.add_argument("--residual-kb", default="0,100,200,300,400")
    args = parser.parse_args()
    for kb in (float(x) for x in args.residual_kb.split(",")):
        print(json.dumps({"platform": args.platform, **errors(args.platform, kb * 1e3)}), flush=True)


if __name__ == "__main__":
    main()
