"""Paired timing of the FA + A2A variants: every variant of one M timed once per trial, back to
back, in an order that rotates by one per trial, so a slow drift of the clock (DVFS, heat)
moves every variant of a trial alike and cancels in the per-trial differences.

    res = measure_shape(case, variants, repeats)        # {variant: (Measurement, replays,
                                                        #  graphed, paired params) or Exception}
    python -m hwkernels.fa_paired --json OUT.json --seq-lens 6144,8192 --entries fa-only,fused-paced,fused-paced:pf

Each trial of each entry is one harness.measure(repeats=1, warmup=0) call: poisoned, L2
flushed, timed, checked on the receiver side; the first `warmup` rounds are checked and dropped;
an entry that fails a check or raises is dropped from the later rounds (no time is kept for it).
Per entry besides its own Stats: the per-trial differences to the base entry (FA-only) on the
same trial, whose median is `paired_diff_us` (p10 / p90 beside it), `paired_order` "rotate".
The main entry point is an A/B of kernel options on one shape (entries "variant[:option]",
OPTIONS), printed as a table and written as JSON; fa_bench --paired writes records.
"""

import argparse
import json
import sys

import numpy as np

from .harness import Measurement, from_kept, measure

BASE = "fa-only"
OPTIONS = {"pf": {"pace_pf": True}, "nopf": {"pace_pf": False}}   # entry suffix -> KernelConfig


def rotations(names: list, trial: int) -> list:
    """The order of trial `trial`: names rotated left by trial % len(names)."""
    k = trial % len(names) if names else 0
    return names[k:] + names[:k]


def measure_entries(entries: dict, repeats: int, warmup: int = 1) -> dict:
    """entries: {name: (run, measure keywords)}. {name: Measurement or Exception}, each
    Measurement's raw results in trial order (see the module doc)."""
    names = list(entries)
    kept = {n: [] for n in names}
    worst = dict.fromkeys(names, 0.0)
    dead: dict = {}
    for trial in range(warmup + repeats):
        for n in rotations(names, trial):
            if n in dead:
                continue
            run, kw = entries[n]
            try:
                m = measure(run, repeats=1, warmup=0, **kw)
            except Exception as exc:  # noqa: BLE001 - the caller reports it per entry
                dead[n] = exc
                continue
            worst[n] = max(worst[n], m.max_abs_err)
            if not m.ok:
                dead[n] = Measurement(False, worst[n], None)
            elif trial >= warmup:
                kept[n].extend(m.raw)
    return {n: dead.get(n) or from_kept(kept[n], worst[n]) for n in names}


def paired_params(m: Measurement, base: Measurement | None, is_base: bool) -> dict:
    """The record params of paired timing: order, trials and, against the base entry (both
    checked), the per-trial differences' median / p10 / p90 in microseconds."""
    out = {"paired_order": "rotate", "paired_trials": len(m.raw)}
    if is_base or base is None or not (m.ok and base.ok) or len(base.raw) != len(m.raw):
        return out
    d = np.array([float(r["kernel_us"]) - float(b["kernel_us"]) for r, b in zip(m.raw, base.raw)])
    out.update(paired_base=BASE, paired_diff_us=float(np.median(d)),
               paired_diff_p10_us=float(np.percentile(d, 10)),
               paired_diff_p90_us=float(np.percentile(d, 90)))
    return out


def measure_named(prepared: dict, repeats: int) -> dict:
    """prepared: {name: (run, replays, graphed, kw) or Exception} -> {name: (Measurement,
    replays, graphed, paired params) or Exception}; the base entry is BASE if present."""
    ready = {n: p for n, p in prepared.items() if not isinstance(p, Exception)}
    ms = measure_entries({n: (p[0], p[3]) for n, p in ready.items()}, repeats)
    base = ms.get(BASE) if not isinstance(ms.get(BASE), Exception) else None
    out = {}
    for n, p in prepared.items():
        m = ms.get(n, p)
        out[n] = m if isinstance(m, Exception) else (m, p[1], p[2],
                                                      paired_params(m, base, n == BASE))
    return out


def measure_shape(case, variants: list, repeats: int, instrument: bool = True) -> dict:
    """Every variant of one Case, paired (fa_bench --paired)."""
    from .fa_bench import prepare_variant

    prepared = {}
    for v in variants:
        try:
            prepared[v] = prepare_variant(case, v, instrument)
        except Exception as exc:  # noqa: BLE001 - reported per variant
            prepared[v] = exc
    return measure_named(prepared, repeats)


def _entry(name: str) -> tuple:
    variant, _, opt = name.partition(":")
    from .fa_variants import VARIANTS

    if variant not in VARIANTS or (opt and opt not in OPTIONS):
        raise ValueError(f'entry {name!r}: "variant[:option]" with a variant of {VARIANTS} '
                         f'and an option of {sorted(OPTIONS)}')
    return variant, OPTIONS.get(opt, {})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="hwkernels.fa_paired", description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True, help="results (JSON) written here")
    ap.add_argument("--seq-lens", default="6144,8192,16384")
    ap.add_argument("--entries", default="fa-only,fused-paced:nopf,fused-paced:pf")
    ap.add_argument("--repeats", type=int, default=8)
    args = ap.parse_args(argv)
    try:
        entries = [(n, *_entry(n)) for n in args.entries.split(",") if n]
        ms = [int(m) for m in args.seq_lens.split(",") if m]
    except ValueError as exc:
        print(f"fa_paired: {exc}", file=sys.stderr)
        return 2
    import torch

    from .fa_bench import _host_view, host_bytes_for, prepare_variant, slots_for
    from .fa_explore import _shape
    from .fa_variants import Case, KernelConfig
    from xsim.fileio import atomic_write

    dev = torch.device("cuda", 0)
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    host = _host_view(host_bytes_for([_shape(m) for m in ms]), dev)
    rows, all_ok = [], True
    for m in ms:
        shape, cases, prepared = _shape(m), {}, {}
        for name, variant, opts in entries:
            cfg = KernelConfig(num_warps=8, num_stages=3, tma=True, **opts)
            case = cases.setdefault(cfg, Case(shape, cfg, host.cuda, slots_for(shape), sms))
            try:
                prepared[name] = prepare_variant(case, variant, True)
            except Exception as exc:  # noqa: BLE001 - reported per entry
                prepared[name] = exc
        res = measure_named(prepared, args.repeats)
        for name, r in res.items():
            row = {"M": m, "entry": name}
            if isinstance(r, Exception):
                row.update(ok=False, error=f"{type(r).__name__}: {r}"[:300])
            else:
                mm, _, _, pp = r
                row.update(ok=mm.ok, err=mm.max_abs_err, **pp,
                           **({k: s.median for k, s in mm.stats.items()} if mm.ok else {}))
            all_ok &= row["ok"]
            rows.append(row)
            print(json.dumps(row, default=float), flush=True)
        del cases, prepared, res
        torch.cuda.empty_cache()
    atomic_write(args.json, json.dumps(rows, indent=1, default=float))
    print(table(rows))
    return 0 if all_ok else 1


def table(rows: list) -> str:
    """M, entry, check, median kernel_us, paired difference to FA-only (median, p10, p90)."""
    lines = [f"{'M':>6} {'entry':>22} {'ok':>3} {'kernel_us':>10} {'diff_us':>8} "
             f"{'p10':>8} {'p90':>8} {'qloop_us':>9}"]
    for r in rows:
        f = [r.get(k, float("nan")) for k in ("kernel_us", "paired_diff_us",
                                              "paired_diff_p10_us", "paired_diff_p90_us",
                                              "qloop_us")]
        lines.append(f"{r['M']:>6} {r['entry']:>22} {'y' if r['ok'] else 'N':>3} {f[0]:>10.1f} "
                     f"{f[1]:>8.1f} {f[2]:>8.1f} {f[3]:>8.1f} {f[4]:>9.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
