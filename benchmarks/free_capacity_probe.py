"""Issue 8, host lead 1: free-running CTAs past G* and their capacity share.

The DES of every micro store point (training and held-out) and the report's MAPEs per split
(period, mean, p90, max over CTAs; all / aligned / free-running), for each variant of the
microbench builder: ``knee`` (``drained_share`` off, ``free_capacity`` 1: every CTA's share is
Q(K)/K, the DES before), ``drained`` (the builder's default: past G* a free-running CTA's share is
max(Q(K)/K, B)), and ``f=X`` (the probe: ``drained_share`` off, every free-running CTA's share
X Q(K)/K). Aligned and isolated points are the same in every variant.

    PYTHONPATH=$PWD python benchmarks/free_capacity_probe.py PLATFORM knee,drained,f=1.1,...
"""

from __future__ import annotations

import sys

import numpy as np

from calibration.records import load_shipped_records, shipped_traces_dir
from calibration.tails import load_trace_tails
from xsim.builders import microbench
from xsim.platform import resolve_platform
from xsim.report import micro
from xsim.simulate_point import micro_params as _micro_params


def _variant(label: str) -> dict:
    if label == "knee":
        return {"drained_share": False, "free_capacity": 1.0}
    if label == "drained":
        return {"drained_share": True, "free_capacity": 1.0}
    if label.startswith("f="):
        return {"drained_share": False, "free_capacity": float(label[2:])}
    raise SystemExit(f"unknown variant {label!r} (knee, drained or f=X)")


def _own(rows, platform, variant: str) -> list[str]:
    """The term's own points: free-running periodic points at G >= the closed form's G*; rms relative
    residual of the mean and p90 issue (the rule's residual, as for IssueModel.free_running_factor)."""
    out = []
    for label, keep in (("held-out", True), ("training", False)):
        own = [r for r in rows if r.heldout == keep and r.kind == "periodic" and not r.aligned and "des" in r.predicted
               and r.gap_us >= microbench.predict(_micro_params("periodic", r.producers, r.burst_bytes, r.gap_us,
                                                                False, 2, 1), platform)["g_star_us"]]
        rel = [r.predicted["des"]["issue_us"] / r.measured["issue_mean"] - 1 for r in own]
        rel90 = [r.predicted["des"]["issue_p90_us"] / r.measured["issue_p90"] - 1 for r in own]
        out.append(f"  {variant:8s} {label:8s} free-running at G >= G* (n = {len(own)}): rms relative residual, "
                   f"mean issue {100 * np.sqrt(np.mean(np.square(rel))):6.2f} %, p90 {100 * np.sqrt(np.mean(np.square(rel90))):6.2f} %")
    return out


def table(name: str, variants: list[str]) -> list[str]:
    platform = resolve_platform(name)
    rs = load_shipped_records(platform=platform.name)
    tails = load_trace_tails(shipped_traces_dir(platform.name))
    micro.des_wanted = lambda row: True          # the DES for every point, training ones too
    lines = [f"{name}: DES MAPE % (period / mean / p90 / max over CTAs, n points), per split and mode"]
    for v in variants:
        def params(*args, _v=_variant(v)):
            out = _micro_params(*args)
            out.update(_v)
            return out
        micro.micro_params = params
        rep = micro.build(rs, platform, des=True, engine="fast", trace_tails=tails, des_for="report",
                          des_timeout_s=None, holdout="split")
        for label, keep in (("held-out", True), ("training", False)):
            err = micro._errors([r for r in rep.rows if r.heldout == keep], "des")
            cells = []
            for mode in ("all", "aligned", "free_running"):
                e = err[mode]
                cells.append(f"{mode} {e['period_mape']:5.2f} / {e['issue_mean_mape']:6.2f} / "
                             f"{e['issue_p90_mape']:6.2f} / {e['issue_max_mape']:6.2f} ({e['n_points']})")
            lines.append(f"  {v:8s} {label:8s} " + " | ".join(cells))
        lines += _own(rep.rows, platform, v)
    micro.micro_params = _micro_params
    return lines


if __name__ == "__main__":
    print("\n".join(table(sys.argv[1], sys.argv[2].split(","))))
