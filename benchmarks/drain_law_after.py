"""R(K) as a term fitted after the stages (not fed back into them): training and held-out DES errors.

The R(K) law of ``calibrate --drain-law k`` is fed back into every stage (knee, plateau, weights) and its
refit fails held out (benchmarks/results/hostmean_error_sources.txt). Here it is fitted once on the shipped
fit's own drain-limited training points (the R stage's selection, one R) and only the DES drains at R(K);
every other parameter stays the shipped profile's. Each variant is simulated on every point; the table gives
training and held-out errors apart (the rule reads the training columns only).

    PYTHONPATH=. python benchmarks/drain_law_after.py h200-nvlink-x2 [--only shipped,after]
"""

from __future__ import annotations

import argparse
import dataclasses

from calibration import stages
from calibration.dataset import choose_mechanism, split, store_records
from calibration.fit import Points, _drain_points, fit_points, overhead_us
from calibration.records import load_shipped_records
from xsim.platform import REFERENCE_PRODUCERS, resolve_platform
from xsim.report import micro

from heldout_error_sources import table


def drain_law_after(rs, platform):
    """(R(132), K0, one R, its rms, the law's rms, n points) on the one-R stages' drain-limited training points."""
    recs = store_records(rs, choose_mechanism(rs, None))
    p = Points.of(split(recs).train)
    st = fit_points(p)
    theta = st.issue.values
    sel = _drain_points(p, st.drain.values[0], theta,
                        overhead_us(p, st.burst_overhead.values[0], st.grid_barrier.values[0]))
    law = stages.fit_drain_law(p.volume_bytes[sel], p.period_us[sel], p.producers[sel], REFERENCE_PRODUCERS)
    return law.values[0], law.values[1], st.drain.values[0], st.drain.rms_residual, law.rms_residual, int(sel.sum())


def errors(rs, platform):
    rep = micro.build(rs, platform, des=True, trace_tails=None, des_for="heldout", des_timeout_s=None,
                      holdout="all")
    recs = store_records(rs, rep.mechanism)
    held = {r.where for r in split(recs).heldout}
    out, groups = {}, {}
    for name, keep in (("train", False), ("heldout", True)):
        rows = [r for r in rep.rows if (r.where in held) == keep]
        out[name] = micro._errors(rows, "des")
        groups[name] = table([r for r in rows if "des" in r.predicted])[:10]
        groups[name + ", by period"] = table([r for r in rows if "des" in r.predicted], by="period")[1:10]
    return out, groups


def line(tag, e):
    a, al, fr = e["all"], e["aligned"], e["free_running"]
    return (f"{tag:28s} period {a['period_mape']:6.2f}  mean {a['issue_mean_mape']:6.2f}  p90 {a['issue_p90_mape']:6.2f}"
            f"  | aligned period/mean {al['period_mape']:5.2f}/{al['issue_mean_mape']:5.2f}"
            f"  free {fr['period_mape']:5.2f}/{fr['issue_mean_mape']:5.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("platform")
    ap.add_argument("--only", default="shipped,after")
    ap.add_argument("--groups", action="store_true", help="also each point class's share of the errors")
    a = ap.parse_args()
    p = resolve_platform(a.platform)
    rs = load_shipped_records(platform=p.name)
    r, k0, r1, rms1, rmsk, n = drain_law_after(rs, p)
    print(f"{p.name}: R(K) after the stages on {n} drain-limited training points: R(132) {r:.3f} GB/s, "
          f"K0 {k0:.3f}; rms {rms1 * 100:.2f} % (one R, {r1:.3f} GB/s) -> {rmsk * 100:.2f} %")
    variants = {"shipped": p, "after": dataclasses.replace(p, drain_rate_gbps=round(r, 3), drain_half_producers=round(k0, 4))}
    for name in a.only.split(","):
        e, groups = errors(rs, variants[name])
        print(line(f"{name} train", e["train"]))
        print(line(f"{name} heldout", e["heldout"]), flush=True)
        if a.groups:
            for split_name, g in groups.items():
                print(f"  {name}, {split_name}: " + "\n    ".join(g))


if __name__ == "__main__":
    main()
