"""What a launch of the fused MoE kernel costs with no work, beside cuBLAS's and an empty kernel's (GPU only).

    python -m hwkernels.moe_floor --json OUT.json [--trials 50]

The GEMM-only comparisons (moe_gemm.py) time one launch with CUDA events; on the few-tile shapes
the kernel's time outside its tiles (6.4-6.7 us in the stamps, docs/moe-kernel.md) is a large part
of it. This separates that time: per precision (the shipped SETTINGS, the catalog's tiles of the
48-tile Linear-1 shape, H 2048, I 768, m 1024), the same compiled kernel

- ``empty``: a table with no tiles (every program starts, finds nothing, exits);
- ``empty_noclk``: the same without the CLK clock sums (two atomics per program at exit);
- ``one_l1``: one Linear-1 tile on one program, nothing else (the tile's own time plus the floor);
- ``l1``: the GEMM path's whole Linear-1 (48 tiles; checked against torch first, as moe_gemm does);

beside ``triton_empty`` (a trivial Triton kernel on 132 programs), ``cublas_tiny`` (a 128 x 128 x 128
bf16 torch.matmul) and ``cublas_l1`` (the same Linear-1 product by cuBLAS). CUDA-event medians of
single launches after a GPU sleep (moe_gemm._events_us, the GEMM runner's timing). Nothing here is a
kernel result the report reads; it says where the few-tile shapes' time goes.
"""

import argparse
import json
import sys
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from xsim.fileio import atomic_write

SHAPE = (2048, 768, 1024)   # H, I, m of the 48-tile Linear-1 (gemm_vs_cublas_min's shape)


def _empty_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def noop(x_ptr):
        if tl.program_id(0) < 0:
            tl.store(x_ptr, 0)
    return noop


def _table(tiles: np.ndarray, n_streams: int, l1_nblocks: int, on_program: int = 0):
    """All of ``tiles`` on one program, none on the others (an empty table for no tiles)."""
    offsets = np.zeros(n_streams + 1, dtype=np.int32)
    offsets[on_program + 1:] = len(tiles)
    return SimpleNamespace(offsets=offsets, tiles=tiles if len(tiles) else np.zeros((1, 4), np.int32),
                           l1_nblocks=l1_nblocks)


def measure(precision: str, trials: int) -> dict:
    import torch

    from . import moe, moe_gemm
    from .moe_bench import SETTINGS

    h, inter, m = SHAPE
    p = moe_gemm.gemm_problem(h, inter, m, precision)
    kc = SETTINGS[precision]
    s, d = p.shape, p.data
    out = torch.empty(s.tokens, 1, s.hidden, dtype=torch.bfloat16, device=d.x.device)
    l1 = p.tables["l1"]
    n_streams = len(l1.offsets) - 1

    def timed(fused, clk=True):
        if not clk:
            pos, kw = fused._args()
            fused._launch_args = (pos, {**kw, "CLK": False})
        fused.launch()
        fused.finish()
        us = [moe_gemm._events_us(fused.enqueue, fused.prepare) for _ in range(trials + 1)][1:]
        fused.finish()
        return float(np.median(us))

    res = {"precision": precision, "shape": {"hidden": h, "intermediate": inter, "m": m},
           "n_streams": n_streams}
    empty = _table(np.zeros((0, 4), np.int32), n_streams, l1.l1_nblocks)
    res["empty_us"] = timed(moe.FusedMoE(s, p.layout, empty, d, out, kc))
    res["empty_noclk_us"] = timed(moe.FusedMoE(s, p.layout, empty, d, out, kc), clk=False)
    one = _table(np.asarray(l1.tiles).reshape(-1, 4)[:1], n_streams, l1.l1_nblocks)
    res["one_l1_us"] = timed(moe.FusedMoE(s, p.layout, one, d, out, kc))
    whole = moe_gemm.measure_path(p, "l1", kc, trials)
    res["l1"] = {k: whole.get(k) for k in ("ok", "max_rel_err", "tiles", "ratio")}
    if whole["ok"]:
        res["l1_us"] = whole["triton_us"]["median"]
        res["cublas_l1_us"] = whole["cublas_us"]["median"]
    stamped = moe_gemm.mainloop_samples(p, "l1", replace(kc, stamps=True))
    if stamped[0]:
        t = stamped[1]
        res["l1_tiles_span_us"] = float(getattr(t, "tiles_span_us", float("nan")))
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="hwkernels.moe_floor", description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True)
    ap.add_argument("--trials", type=int, default=50)
    args = ap.parse_args(argv)
    import torch

    from .moe_gemm import _events_us
    from .records import run_commit

    x = torch.zeros(1, device="cuda")
    noop = _empty_kernel()
    noop[(132,)](x)
    a = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16)
    torch.matmul(a, a)
    base = {"triton_empty_us": float(np.median([_events_us(lambda: noop[(132,)](x)) for _ in range(args.trials)])),
            "cublas_tiny_us": float(np.median([_events_us(lambda: torch.matmul(a, a)) for _ in range(args.trials)])),
            "commit": run_commit()[0], "device": torch.cuda.get_device_name()}
    rows = [measure(prec, args.trials) for prec in ("bf16", "fp8")]
    doc = {**base, "rows": rows}
    atomic_write(args.json, json.dumps(doc, indent=1))
    print(f"triton empty {base['triton_empty_us']:.2f} us, cuBLAS 128^3 {base['cublas_tiny_us']:.2f} us")
    print("| precision | empty | empty, no CLK | one L1 tile | L1 (48 tiles) | cuBLAS L1 | tiles span | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['precision']} | {r['empty_us']:.2f} | {r['empty_noclk_us']:.2f} | {r['one_l1_us']:.2f} | "
              f"{r.get('l1_us', float('nan')):.2f} | {r.get('cublas_l1_us', float('nan')):.2f} | "
              f"{r.get('l1_tiles_span_us', float('nan')):.2f} | {r['l1'].get('ratio') or float('nan'):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
