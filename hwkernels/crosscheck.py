"""Cross-check the CUDA kernel's drain rate with the Triton kernel on a few points.

Both kernels run zero-gap, free-running bursts of the same (K, B, N) into the destination
(the peer's symmetric buffer or the host buffer), are checked by the receiver through the
shared harness, and are timed by CUDA events;
gbps = N * K * B / median kernel time. Records go to their own file (mechanism "triton"
is outside the calibration schema's mechanisms), written by rank 0.
"""

from . import harness, records
from .plan import KB

POINTS = ((132, 8 * KB), (132, 32 * KB), (132, 128 * KB), (33, 32 * KB))
BURSTS = 64
REPEATS = 5


def max_dst_bytes() -> int:
    return max(BURSTS * k * b for k, b in POINTS)


def _measure(ctx, launch, producers, burst_bytes):
    """The shared harness around one kernel: the receiver poisons and checks, all ranks agree."""
    from . import burst_store
    from .symm import all_ok, barrier

    recv = ctx.dest.receive_view()
    receiving = ctx.is_src if ctx.dest.is_receiver_local else ctx.is_dst
    shape = (producers, burst_bytes, BURSTS)

    def poison():
        if receiving:
            burst_store.poison(recv, *shape)

    def check(_result):
        return burst_store.check(recv, *shape) if receiving else (True, 0.0)

    def run():
        if not ctx.is_src:
            return None
        kernel_us = launch()
        return {"kernel_us": kernel_us} if ctx.rank == 0 else None

    return harness.measure(run, repeats=REPEATS, warmup=1, poison=poison, check=check, flush_l2=True,
                           sync=barrier, agree=all_ok)


def run(ctx, out_path, params_of) -> None:
    """Measure POINTS with both kernels; append one record per (point, kernel)."""
    import torch

    from . import triton_store
    from .plan import Point

    for producers, burst_bytes in POINTS:
        pt = Point("periodic", producers, burst_bytes, bursts=BURSTS, warmup_bursts=0,
                   aligned=False, repeats=REPEATS, group="crosscheck")
        peer = ctx.dest.remote(ctx.dst_rank).view(torch.int32) if ctx.is_src else None
        ptr = ctx.dest.remote_ptr(ctx.dst_rank) if ctx.is_src else 0
        kernels = {
            "triton": lambda: triton_store.run(peer, producers, burst_bytes, BURSTS),
            "st.v4": lambda: ctx.bs.run(ptr, producers, burst_bytes, BURSTS, 0, False,
                                        "st.v4", 256).kernel_us,
        }
        for mech, launch in kernels.items():
            m = _measure(ctx, launch, producers, burst_bytes)
            params = params_of(ctx, pt)
            params["mechanism"] = mech
            stats, gbps = None, None
            if m.ok and ctx.rank == 0:
                stats = m.stats_dicts()
                gbps = BURSTS * producers * burst_bytes / (m.stats["kernel_us"].median * 1e3)
            rec = records.make_record("micro", "periodic", params, stats, m.check_dict(), ctx.platform,
                                      ctx.commit, ctx.dirty, gbps=gbps)
            if ctx.rank == 0:
                records.append_record(out_path, rec)
                g = f"{gbps:7.1f} GB/s" if gbps else "CHECK FAILED"
                print(f"crosscheck {mech:6s} K={producers:4d} B={burst_bytes // KB:4d}K "
                      f"N={BURSTS}: {g}", flush=True)
