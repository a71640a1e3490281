"""Cross-check the CUDA kernel's drain rate with the Triton kernel on a few points.

Both kernels run zero-gap, free-running bursts of the same (K, B, N) into the peer's
symmetric buffer, are checked on the destination rank, and are timed by CUDA events;
gbps = N * K * B / median kernel time. Records go to their own file (mechanism "triton"
is outside the calibration schema's mechanisms), written by rank 0.
"""

from . import records
from .plan import KB
from .stats import summarize

POINTS = ((132, 8 * KB), (132, 32 * KB), (132, 128 * KB), (33, 32 * KB))
BURSTS = 64
REPEATS = 5


def max_dst_bytes() -> int:
    return max(BURSTS * k * b for k, b in POINTS)


def _checked_times(ctx, launch, producers, burst_bytes) -> tuple[bool, float, list[float]]:
    from . import burst_store
    from .symm import all_ok, barrier

    times = []
    err = 0.0
    for r in range(REPEATS + 1):
        if ctx.is_dst:
            burst_store.poison(ctx.d.symm, producers, burst_bytes, BURSTS)
        barrier()
        t = launch() if ctx.is_src else None
        barrier()
        ok, e = True, 0.0
        if ctx.is_dst:
            ok, e = burst_store.check(ctx.d.symm, producers, burst_bytes, BURSTS)
        ok, e = all_ok(ok, e)
        err = max(err, e)
        if not ok:
            return False, err, []
        if r > 0 and t is not None:
            times.append(t)
    return True, err, times


def run(ctx, out_path, params_of) -> None:
    """Measure POINTS with both kernels; append one record per (point, kernel)."""
    import torch

    from . import triton_store
    from .plan import Point

    for producers, burst_bytes in POINTS:
        pt = Point("periodic", producers, burst_bytes, bursts=BURSTS, warmup_bursts=0,
                   aligned=False, repeats=REPEATS, group="crosscheck")
        peer = ctx.d.peer_view(ctx.dst_rank).view(torch.int32) if ctx.is_src else None
        ptr = ctx.d.peer_ptr(ctx.dst_rank) if ctx.is_src else 0
        kernels = {
            "triton": lambda: triton_store.run(peer, producers, burst_bytes, BURSTS),
            "st.v4": lambda: ctx.bs.run(ptr, producers, burst_bytes, BURSTS, 0, False,
                                        "st.v4", 256).kernel_us,
        }
        for mech, launch in kernels.items():
            ok, err, times = _checked_times(ctx, launch, producers, burst_bytes)
            params = params_of(ctx, pt)
            params["mechanism"] = mech
            stats, gbps = None, None
            if ok and ctx.rank == 0:
                s = summarize(times)
                stats = {"kernel_us": s.to_dict()}
                gbps = BURSTS * producers * burst_bytes / (s.median * 1e3)
            rec = records.make_record("micro", "periodic", params, stats,
                                      {"ok": ok, "max_abs_err": err}, ctx.platform,
                                      ctx.commit, ctx.dirty, gbps=gbps)
            if ctx.rank == 0:
                records.append_record(out_path, rec)
                g = f"{gbps:7.1f} GB/s" if gbps else "CHECK FAILED"
                print(f"crosscheck {mech:6s} K={producers:4d} B={burst_bytes // KB:4d}K "
                      f"N={BURSTS}: {g}", flush=True)
