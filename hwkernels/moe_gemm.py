"""The fused kernel's GEMM path alone against cuBLAS on one expert's shapes (GPU only).

    p = gemm_problem(hidden, intermediate, m, precision, seed)     # one expert, m rows
    r = measure_path(p, "l1" | "l2", config, trials)               # checked, then timed
    p = gemm_problem(..., experts=E)     # batched diagnostic: E experts of m rows each

Path l1 runs only the Linear-1 tiles of the kernel (x[m, H] @ w1[H, 2I], SwiGLU fused,
activation written to HBM); cuBLAS computes the same product x @ w1 ([m, 2I] out). Path l2
runs only the Linear-2 tiles (counters preset ready, Combine into device memory, weight 1):
act[m, I] @ w2[I, H]; cuBLAS the same. bf16: torch.matmul; fp8: torch._scaled_mm with the
kernel's per-tensor scales. With E > 1 experts (expert e owns rows e*m..(e+1)*m) the kernel
runs every expert's tiles in one launch and cuBLAS is batched: bf16 torch.bmm on [E, m, K] x
[E, K, N] views, fp8 a loop of E torch._scaled_mm calls (each expert's own weight scale).
Each side is checked against an fp32 torch product before it is timed; a failed check
records no time. Times are CUDA-event medians of single launches.
"""

from dataclasses import dataclass

import numpy as np

from . import moe, moe_reference
from .moe_stamps import tile_times
from .stats import summarize


@dataclass
class GemmProblem:
    shape: object          # xsim MoEShape, experts = topk = 1, tokens = m
    layout: object
    tables: dict           # "l1" | "l2" -> table with only that kind's tiles
    data: moe_reference.MoEData
    act_in: object = None  # the L2 path's fixed input activation (made on first use)
    sa_l1: float = 1.0     # fp8: the L1 path's activation scale (make_inputs')
    sa_l2: float = 1.0     # fp8: the scale of act_in (the L2 path's input)


GROUP_M = 8   # m-blocks per raster group of the GEMM-only tables


def gemm_table(kind: int, n_mblocks: int, nblocks: int, n_streams: int, l1_nblocks: int,
               group_m: int = GROUP_M, experts: int = 1):
    """A table of one kind's tiles in grouped raster order, dealt round-robin.

    Per expert (experts outer; expert e's m-blocks are e * n_mblocks ..), groups of group_m
    m-blocks; inside a group n-blocks outer, m-blocks inner, so the tiles running at once
    share each weight slice through the L2 cache (cuBLAS's rasterization; the scheduler's
    wave table deals an m-block's n-blocks together instead, which streams the weight once
    per m-block).
    """
    from types import SimpleNamespace

    order = [(e, e * n_mblocks + m, n) for e in range(experts)
             for g in range(0, n_mblocks, group_m) for n in range(nblocks)
             for m in range(g, min(g + group_m, n_mblocks))]
    tiles = np.array([(kind, e, m, n) for e, m, n in order], dtype=np.int32)
    streams = [tiles[s::n_streams] for s in range(min(n_streams, len(tiles)))]
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in streams])]).astype(np.int32)
    return SimpleNamespace(offsets=offsets, tiles=np.concatenate(streams),
                           l1_nblocks=l1_nblocks)


def gemm_problem(hidden: int, intermediate: int, m: int, precision: str, seed: int = 0,
                 n_streams: int = 132, device="cuda", blocks=(128, 128, 128),
                 experts: int = 1) -> GemmProblem:
    """`experts` experts with m rows each (token t -> expert t // m, weight 1); blocks =
    (block_m, block_n1, block_n2), block_m dividing m."""
    from xsim.moe.layout import expert_layout
    from xsim.moe.routing import Routing
    from xsim.moe.shapes import MoEShape

    if m % blocks[0]:
        raise ValueError(f'"block_m" ({blocks[0]}) must divide the rows per expert ({m}).')
    shape = MoEShape(hidden=hidden, intermediate=intermediate, experts=experts, topk=1,
                     tokens=experts * m, precision=precision, block_m=blocks[0],
                     block_n1=blocks[1], block_n2=blocks[2])
    ids = (np.arange(experts * m) // m).astype(np.int32)[:, None]
    lay = expert_layout(shape, Routing(ids, np.ones(ids.shape, np.float32), "balanced", 0.0, seed))
    n_mb = m // blocks[0]
    tables = {"l1": gemm_table(0, n_mb, shape.l1_nblocks, n_streams, shape.l1_nblocks,
                               experts=experts),
              "l2": gemm_table(1, n_mb, shape.l2_nblocks, n_streams, shape.l1_nblocks,
                               experts=experts)}
    data = moe_reference.make_inputs(shape, seed, device)
    return GemmProblem(shape, lay, tables, data, sa_l1=float(data.scales[1]))


def _events_us(fn, before=None, sleep: bool = True) -> float:
    """One call of ``fn`` timed by CUDA events (``before`` enqueued ahead, untimed). ``sleep``: ~1 ms of
    GPU work first, so the host enqueues start, fn, end before the GPU reaches them (no launch latency
    timed); False where work is already queued ahead (a steady-state trial's heat)."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if before is not None:
        before()
    if sleep:
        torch.cuda._sleep(2_000_000)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3


def _rel_err(got, want) -> float:
    return float((got.float() - want).abs().max() / want.abs().max().clamp_min(1e-6))


def _act_reference(p: GemmProblem):
    """fp32 silu(x Wg) * (x Wu) for the kernel's inputs (dequantized for fp8), per expert."""
    import torch

    d, fp8 = p.data, p.data.precision == "fp8"
    e_n, inter = d.w1.shape[0], d.w1.shape[1] // 2
    m = d.x.shape[0] // e_n
    out = torch.empty(d.x.shape[0], inter, dtype=torch.float32, device=d.x.device)
    for e in range(e_n):
        x = d.x[e * m:(e + 1) * m].float() * (d.scales[0] if fp8 else 1.0)
        h = x @ (d.w1[e].t().float() * (d.scales[2 + e] if fp8 else 1.0))
        out[e * m:(e + 1) * m] = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
    return out


def _cublas(p: GemmProblem, path: str, fast_accum: bool = False):
    """(fn, want) for cuBLAS computing the same product as the kernel's path (fn returns
    [rows, N]). fp8: fast_accum = cuBLAS's own unpromoted fp8 accumulation (like-for-like
    with a kernel that does not promote, acc_k = 0). E > 1: batched (module docstring)."""
    import torch

    d, fp8 = p.data, p.data.precision == "fp8"
    e_n = d.w1.shape[0]
    if path == "l1":
        a, w, sa, sb = d.x, d.w1, d.scales[0:1], d.scales[2:2 + e_n]
    else:
        a, w, sa, sb = p.act_in, d.w2, d.scales[1:2], d.scales[2 + e_n:2 + 2 * e_n]
    a3, b3 = a.view(e_n, a.shape[0] // e_n, -1), w.transpose(1, 2)     # b3[e] = w[e].t(): column-major
    want = torch.cat([(a3[e].float() * (sa if fp8 else 1.0))
                      @ (b3[e].float() * (sb[e] if fp8 else 1.0)) for e in range(e_n)])
    if fp8:
        sa = sa.clone()                         # own allocations: cuBLASLt wants aligned scales
        sbs = [sb[e:e + 1].clone() for e in range(e_n)]
        mm = lambda e: torch._scaled_mm(a3[e], b3[e], scale_a=sa, scale_b=sbs[e],  # noqa: E731
                                        out_dtype=torch.bfloat16, use_fast_accum=fast_accum)
        if e_n == 1:
            fn = lambda: mm(0)  # noqa: E731
        else:
            fn = lambda: [mm(e) for e in range(e_n)]  # noqa: E731
    elif e_n == 1:
        b = b3[0]
        fn = lambda: torch.matmul(a, b)  # noqa: E731
    else:
        fn = lambda: torch.bmm(a3, b3)  # noqa: E731
    return fn, want


def _rows(res, n: int):
    """A cuBLAS result ([rows, N], [E, m, N] or a list of [m, N]) as [rows, N]."""
    import torch

    return torch.cat(res) if isinstance(res, list) else res.reshape(-1, n)


def _checked_run(p: GemmProblem, path: str, config: moe.KernelConfig):
    """Build the path's kernel, run it once and check it: (fused, rel_err, cublas fn, want)."""
    import torch

    s, d = p.shape, p.data
    fp8 = d.precision == "fp8"
    out = torch.empty(s.tokens, 1, s.hidden, dtype=torch.bfloat16, device=d.x.device)
    fused = moe.FusedMoE(s, p.layout, p.tables[path], d, out, config, ready=(path == "l2"))
    if path == "l2":
        if getattr(p, "act_in", None) is None:
            g = torch.Generator(device=d.x.device).manual_seed(7)
            act = torch.randn(s.tokens, s.intermediate, generator=g, device=d.x.device)
            if fp8:
                p.sa_l2 = float(act.abs().max()) / moe_reference.FP8_MAX
                act = (act / p.sa_l2).to(torch.float8_e4m3fn)
            p.act_in = act.to(fused.act.dtype)
        fused.act.copy_(p.act_in)
    if fp8:   # scales[1] is the act scale both paths read: set it for this path, every run
        d.scales[1] = p.sa_l1 if path == "l1" else p.sa_l2
    acc_k = config.acc_k1 if path == "l1" else config.acc_k2
    cublas_fn, want = _cublas(p, path, fast_accum=fp8 and acc_k == 0)
    fused.launch()
    fused.finish()
    if path == "l1":
        got = fused.act.float() * (d.scales[1] if fp8 else 1.0)
        err = _rel_err(got, _act_reference(p))
    else:
        err = _rel_err(out[:, 0], want)
    return fused, err, cublas_fn, want


def _tol(p: GemmProblem, path: str) -> float:
    """Max error / max |want|: bf16 rounding; the fp8 l1 path also rounds its output to e4m3
    (half a step at the top of the range is 1/32 of the value, plus fp32 order effects)."""
    return 8e-2 if (path == "l1" and p.data.precision == "fp8") else 3e-2


def measure_path(p: GemmProblem, path: str, config: moe.KernelConfig, trials: int = 20) -> dict:
    """Check, then time, the kernel's path and cuBLAS; dict of results (times None if wrong)."""
    s = p.shape
    tol = _tol(p, path)
    fused, err, cublas_fn, want = _checked_run(p, path, config)
    cublas_err = _rel_err(_rows(cublas_fn(), want.shape[1]), want)
    res = {"path": path, "m": s.tokens, "n": 2 * s.intermediate if path == "l1" else s.hidden,
           "k": s.hidden if path == "l1" else s.intermediate, "precision": p.data.precision,
           "ok": err <= tol and cublas_err <= tol, "max_rel_err": max(err, cublas_err),
           "kernel_rel_err": err, "cublas_rel_err": cublas_err,
           "tiles": int(fused.n_tiles), "resources": fused.resources,
           "experts": int(p.data.w1.shape[0]), "streams": int(fused.n_streams)}
    if not res["ok"]:
        return res
    ours = [_events_us(fused.enqueue, fused.prepare) for _ in range(trials + 1)][1:]
    theirs = [_events_us(cublas_fn) for _ in range(trials + 1)][1:]
    fused.finish()
    res["triton_us"] = summarize(ours).to_dict()
    res["cublas_us"] = summarize(theirs).to_dict()
    res["ratio"] = res["cublas_us"]["median"] / res["triton_us"]["median"]
    flops = 2.0 * res["m"] * res["n"] * res["k"]
    res["triton_tflops"] = flops / res["triton_us"]["median"] / 1e6
    return res


def mainloop_samples(p: GemmProblem, path: str, config: moe.KernelConfig):
    """(ok, TileTimes) of one checked run of the path with stamps on (None when wrong)."""
    from dataclasses import replace

    fused, err, _, _ = _checked_run(p, path, replace(config, stamps=True))
    if err > _tol(p, path):
        return False, None
    return True, tile_times(fused.stamp_array(), fused.tiles.cpu().numpy(), fused.offsets.cpu().numpy())
