"""GEMM tiles beside host stores at a swept rate: the fused MoE kernel's mainloops under link load (GPU only).

    python -m hwkernels.moe_beside --out OUT.jsonl [--configs A,probe-B,x.toml] [--own 0,1,2,4,8]
           [--storers 16,33,66] [--dests host,local] [--repeats 5] [--budget-s 0]
           [--combine-hint evict_first|cs] [--traces T.npz]

The catalog's dit-moe layers run their Linear-2 mainloops 15-17 % longer over the host link than in
the local-Combine control once the link carries ~40 % of its rate, and the other layers at similar
loads do not (docs/moe.md, "second mechanism"). The validation records must not calibrate a law for
it, so this is its microbenchmark: the same fused kernel and tiles, on tables that fix the store rate
instead of a schedule, the Combine into mapped host memory or (control) into device memory.

Tables (``beside_table``; every L2 tile of the layer exactly once, so the whole destination is
checked against the torch reference after every run; L1 tiles cycle over the layer's L1 tiles, as
many as the pattern asks):
  own j:      every program runs its share of the L2 tiles, each followed by j L1 tiles: each SM's
              own Combine every (T2 + j T1), the rate set by j;
  beside n:   programs 0..n-1 run L2 tiles only (the storers), the others L1 tiles only, about as
              long (``flop_ratio``): GEMM tiles on SMs that store nothing, beside n that do.
The l2_full counters start full (``FusedMoE(ready=True)``) and the activations are a one-program
wave kernel's (run and checked first): an L1 tile rewrites the same bits, so a Linear-2 tile reading
them mid-rewrite reads the right values.

Per point (``harness.measure``: poison, launch, check; run 0 untimed): kernel_us (CUDA events), the
stamped per-tile mainloops of each kind, the L1 mainloops that started while L2 tiles still stored
(``l1_during_us``), the Combine spans, and the store window (first L2 tile start to last L2 store
end) with the bytes stored in it. Records: experiment "moe", kind "beside".
``--combine-hint`` stores the Combine with an L2 hint (``evict_first``, or ``cs``: st.global.cs), the
records carrying it (params.combine_hint), to test whether the stretch is the L2's.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

OWN, BESIDE = "own", "beside"
PROBES = Path(__file__).with_name("beside_probes.toml")   # synthetic layers, not a catalog


def configs_named(names) -> list:
    """Configs by name (the one-GPU catalog's or the synthetic probes') or by .toml path, in order
    (ValueError, one line, for an unknown one)."""
    from .moe_catalog import load_configs, load_toml

    probes = {c.name: c for c in load_toml(PROBES)}
    return [c for n in names for c in ([probes[n]] if n in probes else load_configs(n))]


def flop_ratio(shape) -> float:
    """An L2 tile's products over an L1 tile's (L1 computes gate and up: 2 x block_n1 columns)."""
    return (shape.block_n2 * shape.intermediate) / (2 * shape.block_n1 * shape.hidden)


def beside_table(base, pattern: str, k: int, n_programs: int, ratio: float):
    """A TileTable of ``base``'s tiles (every L2 tile once) in ``pattern`` (own: k L1 tiles after
    each L2 tile on every program; beside: k storing programs of L2 tiles, the rest L1 tiles)."""
    from xsim.moe.tiles import KIND, L1, L2, TileTable

    if n_programs < 1:
        raise ValueError('"n_programs" must be >= 1.')
    l1 = base.tiles[base.tiles[:, KIND] == L1]
    l2 = base.tiles[base.tiles[:, KIND] == L2]
    if not len(l1) or not len(l2):
        raise ValueError("the base table needs Linear-1 and Linear-2 tiles.")
    cursor = 0

    def take_l1(n: int) -> np.ndarray:
        nonlocal cursor
        idx = (cursor + np.arange(n)) % len(l1)
        cursor += n
        return l1[idx]

    streams = []
    if pattern == OWN:
        if k < 0:
            raise ValueError('"own" needs k >= 0 L1 tiles per L2 tile.')
        for s in range(n_programs):
            mine = l2[s::n_programs]
            parts = []
            for row in mine:
                parts += [row[None, :], take_l1(k)]
            streams.append(np.concatenate(parts) if parts else np.zeros((0, 4), np.int32))
    elif pattern == BESIDE:
        if not 1 <= k < n_programs:
            raise ValueError(f'"beside" needs 1 <= storers < {n_programs}, got {k}.')
        per = -(-len(l2) // k)
        n_l1 = int(np.ceil(per * ratio))
        streams = [l2[s::k] for s in range(k)] + [take_l1(n_l1) for _ in range(k, n_programs)]
    else:
        raise ValueError(f'"pattern" must be {OWN} or {BESIDE}, got {pattern!r}')
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in streams])]).astype(np.int32)
    tiles = np.concatenate(streams).astype(np.int32)
    return TileTable(offsets=offsets, tiles=tiles, l1_nblocks=base.l1_nblocks,
                     l2_nblocks=base.l2_nblocks, n_mblocks=base.n_mblocks, schedule=f"{pattern}-{k}")


def tile_store_bytes(table, layout, shape) -> np.ndarray:
    """Bytes each tile of the table stores to the Combine destination (an L2 tile: valid rows x block_n2
    columns x 2 bytes, bf16 output; an L1 tile: 0)."""
    from xsim.moe.tiles import KIND, L2, MBLOCK

    from .moe import mblock_bounds

    row0, rend = mblock_bounds(layout, shape.block_m)
    mb = table.tiles[:, MBLOCK]
    rows = np.minimum(rend[mb] - row0[mb], shape.block_m)
    return np.where(table.tiles[:, KIND] == L2, rows * shape.block_n2 * 2, 0).astype(np.int64)


def store_bytes(table, layout, shape) -> int:
    """Bytes the table's L2 tiles store (the sum of ``tile_store_bytes``)."""
    return int(tile_store_bytes(table, layout, shape).sum())


def window_samples(fused, kernel_us: float) -> dict:
    """kernel_samples plus the store window and the L1 mainloops that ran inside it."""
    from .moe_stamps import kernel_samples, run_times

    st = fused.stamp_array()
    t = run_times(fused, st)                  # the stamps off the GPU once, their times once
    out = kernel_samples(fused, kernel_us, t)
    kind = t.kind
    l2 = kind == 1
    first, last = st[l2, 0].min(), st[l2, 4].max()
    out["store_window_us"] = float(last - first) / 1e3
    inside = (kind == 0) & (st[:, 1] >= first) & (st[:, 2] <= last)
    out["l1_during_us"] = t.mainloop_us[inside]
    out = {k: v for k, v in out.items() if np.size(v)}    # a pattern without L1 tiles has none
    return out | {"_stamps": relative_stamps(st)}      # raw, for --traces


def relative_stamps(st: np.ndarray) -> np.ndarray:
    """Stamps as ns from the first tile's start (int32 where they fit: the traces stay small)."""
    rel = st - st[:, 0].min()
    return rel.astype(np.int32) if rel.max() < 2**31 else rel


def add_trace(traces: dict, key: str, dest: str, stamps: np.ndarray, table, layout, shape) -> None:
    """One traced run into ``traces``: ``key|dest|stamps`` (relative ns), and the table's ``key|tiles``,
    ``key|offsets``, ``key|store_bytes`` (each tile's Combine bytes), shared by the key's destinations."""
    traces[f"{key}|{dest}|stamps"] = stamps
    traces[f"{key}|tiles"], traces[f"{key}|offsets"] = table.tiles, table.offsets
    traces[f"{key}|store_bytes"] = tile_store_bytes(table, layout, shape)


def save_traces(path, traces: dict, commit: str) -> None:
    """``traces`` as one .npz (written to a temporary file, then renamed over ``path``; ``commit`` inside)."""
    import os

    tmp = f"{path}.tmp.npz"
    np.savez_compressed(tmp, commit=np.array(commit), **traces)
    os.replace(tmp, path)


def parse_args(argv=None):
    from .moe import COMBINE_HINTS

    ap = argparse.ArgumentParser(prog="hwkernels.moe_beside", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="records file (JSONL), appended to")
    ap.add_argument("--configs", default="moe1-dit-moe-bf16-zipf-4096,moe1-hy3-bf16-balanced-1024,"
                    "moe1-glm-5.2-fp8-balanced-1024,moe1-mimo-v2.5-bf16-balanced-4096")
    ap.add_argument("--own", default="0,1,2,3,4,6,8,12", help="L1 tiles per L2 tile (pattern own)")
    ap.add_argument("--storers", default="8,16,33,66,99", help="storing programs (pattern beside)")
    ap.add_argument("--dests", default="host,local")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=0.0, help="start no config after this many seconds")
    ap.add_argument("--traces", default=None, help="a new .npz: each point's last stamped run, its table and "
                    "each tile's Combine bytes, keyed config|pattern-k|{dest|stamps, tiles, offsets, store_bytes}")
    ap.add_argument("--combine-hint", default="", choices=COMBINE_HINTS,
                    help="the Combine stores' L2 hint (KernelConfig.combine_hint; the records carry it)")
    args = ap.parse_args(argv)
    try:
        args.own = [int(x) for x in args.own.split(",") if x]
        args.storers = [int(x) for x in args.storers.split(",") if x]
    except ValueError:
        ap.error("--own and --storers are comma-separated integers")
    args.dests = [d for d in args.dests.split(",") if d]
    if any(d not in ("host", "local") for d in args.dests) or not args.dests:
        ap.error("--dests: host and/or local")
    if args.repeats < 1 or any(j < 0 for j in args.own) or any(n < 1 for n in args.storers):
        ap.error("--repeats >= 1, --own >= 0, --storers >= 1")
    try:
        args.configs = configs_named([c.strip() for c in args.configs.split(",") if c.strip()])
    except (ValueError, OSError) as e:
        ap.error(f"--configs: {e}")
    if not args.configs:
        ap.error("--configs names no layer")
    if args.traces and Path(args.traces).exists():
        ap.error(f"--traces: {args.traces} exists (not overwritten)")
    return args


def run_config(cfg, args, commit, dirty, plat, device, sms, traces=None) -> list:
    """Every (pattern, dest) point of one config: (config, pattern, k, dest, ok, medians) rows. ``traces``
    (a dict) gets each checked point's last stamped run, its table and each tile's Combine bytes."""
    from dataclasses import replace

    from xsim.moe.layout import expert_layout
    from xsim.moe.routing import route
    from xsim.moe.schedule import schedule_table

    from . import moe, moe_reference, records
    from .harness import measure
    from .moe_bench import SETTINGS
    from .moe_bench_io import host_out, kernel_params, local_out
    from .moe_gemm import _events_us

    s = cfg.shape
    data = moe_reference.make_inputs(s, cfg.seed, device)
    lay = expert_layout(s, route(s, cfg.routing, cfg.skew, cfg.seed))
    ref = moe_reference.reference(data, lay, s.topk)
    # the whole (view, cpu view, buffer) triple stays referenced: the pinned memory is freed with its buffer
    held = {d: (host_out if d == "host" else local_out)(s, device) for d in {*args.dests, "local"}}
    outs = {d: h[0] for d, h in held.items()}
    kc = replace(SETTINGS[s.precision], stamps=True, combine_hint=args.combine_hint)
    base = schedule_table(s, lay, "wave", n_streams=sms)
    # the activations: one program runs the whole wave table (no wait can stall it, also under
    # Triton's interpreter, which runs programs one after another), checked before any point
    filled = moe.FusedMoE(s, lay, schedule_table(s, lay, "wave", n_streams=1), data, outs["local"], kc)
    outs["local"].fill_(float("nan"))
    filled.launch()
    filled.finish()
    ok, err = moe_reference.check(outs["local"], ref)
    if not ok:
        raise RuntimeError(f"{cfg.name}: the wave kernel fails its check (max err {err:.3g})")
    ratio = flop_ratio(s)
    rows = []
    points = [(OWN, j) for j in args.own] + [(BESIDE, n) for n in args.storers if n < sms]
    for pattern, k in points:
        table = beside_table(base, pattern, k, sms, ratio)
        nbytes = store_bytes(table, lay, s)
        for dest in args.dests:
            out = outs[dest]
            fused = moe.FusedMoE(s, lay, table, data, out, kc, ready=True)
            fused.act.copy_(filled.act)

            def run(fused=fused):
                us = _events_us(fused.enqueue, fused.prepare)
                fused.finish()
                return window_samples(fused, us)

            m = measure(run, args.repeats, warmup=1, poison=lambda out=out: out.fill_(float("nan")),
                        check=lambda _, out=out: moe_reference.check(out, ref))
            if traces is not None and m.ok:
                add_trace(traces, f"{cfg.name}|{pattern}-{k}", dest, m.raw[-1]["_stamps"], table, lay, s)
            p = (cfg.params(f"{pattern}-{k}", 0.0, dest) | kernel_params(kc)
                 | {"pattern": pattern, "l1_per_l2": k if pattern == OWN else None,
                    "storers": k if pattern == BESIDE else sms, "programs": sms,
                    "l2_bytes": nbytes, "flop_ratio": ratio, "repeats": args.repeats})
            st = m.stats_dicts()
            records.append_record(args.out, records.make_record("moe", "beside", p, st, m.check_dict(),
                                                                plat, commit, dirty))
            med = {k2: v["median"] for k2, v in (st or {}).items()}
            rows.append((cfg.name, pattern, k, dest, m.ok, med, nbytes))
            print(f"{cfg.name} {pattern} {k} {dest}: ok={m.ok} err={m.max_abs_err:.3g} "
                  + " ".join(f"{n}={med[n]:.4g}" for n in ("kernel_us", "l1_mainloop_us", "l2_mainloop_us",
                                                           "l1_during_us", "store_window_us") if n in med),
                  flush=True)
            del fused
    return rows


def main(argv=None) -> int:
    import torch

    from .moe_bench_io import one_gpu_session
    from .moe_catalog import within_budget

    args = parse_args(argv)
    configs = args.configs
    device, sms, commit, dirty, plat = one_gpu_session()
    rows, traces = [], ({} if args.traces else None)
    for cfg in within_budget(configs, args.budget_s):
        rows += run_config(cfg, args, commit, dirty, plat, device, sms, traces)
        torch.cuda.empty_cache()
        if traces:
            save_traces(args.traces, traces, commit)      # after every config: a killed run keeps the rest
    nan = float("nan")
    print("| config | pattern | k | dest | ok | kernel us | L1 ml | L1 during | L2 ml | GB/s in window |")
    print("| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name, pattern, k, dest, ok, med, nbytes in rows:
        w = med.get("store_window_us", nan)
        print(f"| {name} | {pattern} | {k} | {dest} | {ok} | {med.get('kernel_us', nan):.1f} | "
              f"{med.get('l1_mainloop_us', nan):.2f} | {med.get('l1_during_us', nan):.2f} | "
              f"{med.get('l2_mainloop_us', nan):.2f} | {nbytes / (w * 1e3) if w > 0 else nan:.1f} |")
    return 0 if rows and all(r[4] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
