"""FA-only: the Gluon candidates (fa_gluon_sass.CANDIDATES) beside cuDNN SDPA and the shipped Triton
kernel, one process, every point checked against torch SDPA in float32 first (prints, JSON).

    python -m hwkernels.fa_gluon_explore --check --candidates g-s3-o2      # 1K and 8K, exit 1 on a miss
    python -m hwkernels.fa_gluon_explore --json OUT.json [--ms 1024,...] [--xcheck]
    python -m hwkernels.fa_gluon_explore --json OUT.json --rounds 8     # interleaved, per-round ratios

Shapes as the sweep's FA-only: bf16, d = 128, H = 32, N = 4 (8 local heads), batch =
max(1, 4096 // M). Timing (the same for every entry): a CUDA graph of `--launches` back-to-back
launches writing the same output, replayed to ~20 ms, between two CUDA events; per trial the
output poisoned (NaN), the L2 flushed, run, checked (harness.measure; 1 checked warm-up, then
`--repeats` trials kept); the median per-launch time. The L2 is not flushed between the
launches of one trial (K/V stay warm for cuDNN and ours alike). --xcheck: also cuDNN and the
shipped kernel through fa_explore's own path (fa_explore.fa_section, config "base").
"""

import argparse
import json
import os
import sys
import time

from . import fa, fa_gluon_launch, fa_gluon_sass

TARGET_US = 20000.0


def _shape(m):
    return fa.FAShape(batch=max(1, 4096 // m), heads=32, seq_len=m, head_dim=128, sp=4)


def _entries(names, q, k, v, shape, sms):
    """name -> (fn that launches once, output holder [tensor]) for cuDNN, base, candidates."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    out = {}
    hold = [None]

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            hold[0] = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    out["cudnn"] = (cudnn, hold)
    for name in names:
        o = torch.empty_like(q)
        if name == "triton-base":        # KernelConfig's defaults: the shipped FA-only kernel
            fn = (lambda o=o: fa.launch_fa(q, k, v, shape, fa.MODE_LOCAL, out=o, programs=sms,
                                           num_warps=8, num_stages=3, tma=True, emu=1, qreg=True))
        else:
            st, ov, pp, pers = fa_gluon_sass.CANDIDATES[name]
            fn = (lambda o=o, st=st, ov=ov, pp=pp, pers=pers: fa_gluon_launch.gluon_fa(
                q, k, v, out=o, stages=st, overlap=ov, pingpong=pp,
                programs=sms if pers else shape.n_tiles)[1])
        out[name] = (fn, [o])
    return out


def _problem(m, names):
    """(float32 reference, _entries) of the sweep's shape at M = m, seeded inputs."""
    import torch

    shape = _shape(m)
    q, k, v = fa.generate_input(shape, seed=m)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return fa.reference(q, k, v), _entries(names, q, k, v, shape, sms)


def check(names, ms=(1024, 8192)) -> list:
    """One launch of each candidate at each M against the float32 reference."""
    import torch

    rows = []
    for m in ms:
        ref, ents = _problem(m, names)
        for name, (fn, hold) in ents.items():
            fa.poison(*(h for h in hold if h is not None))
            t0 = time.time()
            try:
                fn()
                torch.cuda.synchronize()
                ok, err = fa.check_local(hold[0], ref)
                r = {"M": m, "name": name, "ok": ok, "err": err}
            except Exception as exc:  # noqa: BLE001 - reported, the rest go on
                r = {"M": m, "name": name, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
            r["wall_s"] = round(time.time() - t0, 2)
            rows.append(r)
            print(json.dumps(r, default=float), flush=True)
    return rows


def time_section(names, ms, repeats, launches, deadline) -> list:
    import torch

    from .harness import capture_graph, graph_replay_us, measure

    rows = []
    for m in ms:
        ref, ents = _problem(m, names)
        for name in ["cudnn"] + list(names) + ["cudnn"]:
            if time.time() > deadline:
                return rows
            fn, hold = ents[name]
            r = {"section": "time", "M": m, "name": name}
            try:
                ring = (lambda fn=fn: [fn() for _ in range(launches)])
                ret = fn()
                graph = capture_graph(ring)
                torch.cuda.synchronize()
                replays = max(1, int(TARGET_US // max(graph_replay_us(ring, 1, graph=graph), 1.0)))
                mm = measure(lambda: {"kernel_us": graph_replay_us(ring, replays, graph=graph)
                                      / launches},
                             repeats=repeats, warmup=1, poison=lambda: fa.poison(hold[0]),
                             check=lambda _r: fa.check_local(hold[0], ref), flush_l2=True)
                r.update(ok=mm.ok, err=mm.max_abs_err, replays=replays)
                if mm.ok:
                    s = mm.stats["kernel_us"]
                    r.update(kernel_us=s.median, p10=s.p10,
                             p90=s.p90, samples=[float(x) for x in mm.samples["kernel_us"]])
                if name in fa_gluon_sass.CANDIDATES and ret is not None:
                    r["sass"] = fa_gluon_sass.inspect(ret)
                    r["sass"]["n_regs"] = getattr(ret, "n_regs", None)
                    r["sass"]["n_spills"] = getattr(ret, "n_spills", None)
            except Exception as exc:  # noqa: BLE001 - reported, the rest go on
                r.update(ok=False, error=f"{type(exc).__name__}: {exc}"[:300])
            if name == "cudnn" and any(x["M"] == m and x["name"] == "cudnn" for x in rows):
                r["name"] = "cudnn-after"
            rows.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "samples"}, default=float), flush=True)
    return rows


def _timer(fn, hold, ref, launches):
    """(one checked trial -> harness.Measurement, replays) over fn's CUDA graph of `launches`."""
    import torch

    from .harness import capture_graph, graph_replay_us, measure

    ring = (lambda: [fn() for _ in range(launches)])
    fn()
    graph = capture_graph(ring)
    torch.cuda.synchronize()
    replays = max(1, int(TARGET_US // max(graph_replay_us(ring, 1, graph=graph), 1.0)))

    def trial(warmup=0):
        return measure(lambda: {"kernel_us": graph_replay_us(ring, replays, graph=graph) / launches},
                       repeats=1, warmup=warmup, poison=lambda: fa.poison(hold[0]),
                       check=lambda _r: fa.check_local(hold[0], ref), flush_l2=True)
    return trial, replays


def rounds_section(names, ms, rounds, launches, deadline) -> list:
    """Interleaved: per M, `rounds` rounds of one checked trial of every entry (cuDNN, names;
    the order rotated each round), so a clock drift lands on all alike; per entry the median
    trial and the median over rounds of cuDNN's trial / its trial."""
    import numpy as np

    rows = []
    for m in ms:
        if time.time() > deadline:
            return rows
        ref, ents = _problem(m, names)
        order = ["cudnn"] + list(names)
        timers, samples, errs = {}, {n: [] for n in order}, {n: 0.0 for n in order}
        for n in order:
            try:
                timers[n], _ = _timer(*ents[n], ref, launches)
                errs[n] = timers[n](warmup=1).max_abs_err
            except Exception as exc:  # noqa: BLE001 - reported, the rest go on
                rows.append({"section": "rounds", "M": m, "name": n, "ok": False,
                             "error": f"{type(exc).__name__}: {exc}"[:300]})
        for i in range(rounds):
            live = [n for n in order if n in timers]
            for n in live[i % len(live):] + live[:i % len(live)]:
                mm = timers[n]()
                errs[n] = max(errs[n], mm.max_abs_err)
                samples[n].append(mm.samples["kernel_us"][0] if mm.ok else float("nan"))
        cud = np.array(samples["cudnn"])
        for n in timers:
            x = np.array(samples[n])
            r = {"section": "rounds", "M": m, "name": n, "ok": bool(np.all(np.isfinite(x))),
                 "err": errs[n], "kernel_us": float(np.median(x)), "samples": x.tolist(),
                 "ratio_median": float(np.median(cud / x)), "ratio_min": float(np.min(cud / x)),
                 "ratio_max": float(np.max(cud / x))}
            rows.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "samples"}, default=float),
                  flush=True)
    return rows


def rounds_table(rows) -> str:
    ms = sorted({r["M"] for r in rows if r.get("ok")})
    names = [n for n in dict.fromkeys(r["name"] for r in rows) if n != "cudnn"]
    cud = {r["M"]: r["kernel_us"] for r in rows if r["name"] == "cudnn" and r.get("ok")}
    lines = [f"{'cuDNN us':>14} " + " ".join(f"{cud.get(m, float('nan')):7.1f}" for m in ms),
             f"{'median ratio':>14} " + " ".join(f"{m:>7}" for m in ms) + "     min"]
    for n in names:
        got = {r["M"]: r["ratio_median"] for r in rows if r["name"] == n and r.get("ok")}
        cells = " ".join(f"{got[m]:7.3f}" if m in got else f"{'-':>7}" for m in ms)
        lines.append(f"{n:>14} {cells} {min(got.values()) if got else float('nan'):7.3f}")
    return "\n".join(lines)


def ratio_table(rows) -> str:
    cud = {r["M"]: r["kernel_us"] for r in rows if r.get("name") == "cudnn" and r.get("ok")}
    ms = sorted(cud)
    names = [n for n in dict.fromkeys(r["name"] for r in rows) if n not in ("cudnn", "cudnn-after")]
    lines = [f"{'cuDNN us':>14} " + " ".join(f"{cud[m]:7.1f}" for m in ms),
             f"{'cuDNN/ours':>14} " + " ".join(f"{m:>7}" for m in ms) + "     min"]
    for n in names:
        got = {r["M"]: cud[r["M"]] / r["kernel_us"] for r in rows
               if r["name"] == n and r.get("ok") and r["M"] in cud}
        cells = " ".join(f"{got[m]:7.3f}" if m in got else f"{'-':>7}" for m in ms)
        lines.append(f"{n:>14} {cells} {min(got.values()) if got else float('nan'):7.3f}")
    return "\n".join(lines)


def _atomic_json(path, obj):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, default=float)
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="hwkernels.fa_gluon_explore")
    ap.add_argument("--json", default="")
    ap.add_argument("--candidates", default="g-s3-o0,g-s3-o2")
    ap.add_argument("--ms", default="1024,2048,3072,4096,6144,8192,12288,16384")
    ap.add_argument("--check", action="store_true", help="only the 1K / 8K check; exit 1 on a miss")
    ap.add_argument("--no-base", action="store_true", help="without the shipped Triton kernel")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--launches", type=int, default=4)
    ap.add_argument("--budget-s", type=float, default=120.0)
    ap.add_argument("--rounds", type=int, default=0,
                    help="interleaved rounds instead (rounds_section): ratios per round")
    ap.add_argument("--xcheck", action="store_true", help="also fa_explore's cuDNN and base")
    args = ap.parse_args(argv)
    names = [n for n in args.candidates.split(",") if n]
    bad = [n for n in names if n not in fa_gluon_sass.CANDIDATES]
    try:
        ms = [int(x) for x in args.ms.split(",") if x]
    except ValueError:
        ms = []
    if bad or not ms or any(m % 128 for m in ms) or args.repeats < 1 or args.launches < 1 or args.rounds < 0:
        print(f"fa_gluon_explore: bad arguments (unknown {bad}, M {args.ms!r} must be multiples of "
              f"128, repeats/launches >= 1)", file=sys.stderr)
        return 2
    if args.check:
        rows = check(names)
        if args.json:
            _atomic_json(args.json, rows)
        return 0 if all(r["ok"] for r in rows) else 1
    t_end = time.time() + args.budget_s
    if args.rounds:
        rows = rounds_section((["triton-base"] if not args.no_base else []) + names, ms,
                              args.rounds, args.launches, t_end)
        if args.json:
            _atomic_json(args.json, rows)
        print(rounds_table(rows))
        return 0
    rows = time_section(([] if args.no_base else ["triton-base"]) + names, ms, args.repeats,
                        args.launches, t_end)
    if args.xcheck and time.time() < t_end:
        import torch

        from . import fa_explore
        from .fa_bench import _host_view, host_bytes_for

        host_buf = _host_view(host_bytes_for([_shape(m) for m in ms]), torch.device("cuda", 0))
        xrows: list = []
        fa_explore.fa_section(host_buf.cuda, torch.cuda.get_device_properties(0).multi_processor_count,
                              xrows, t_end, ms, ["base"])
        rows += [{**r, "section": "xcheck"} for r in xrows]
        print(fa_explore.ratio_table(xrows))
    if args.json:
        _atomic_json(args.json, rows)
    print(ratio_table([r for r in rows if r.get("section") == "time"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
