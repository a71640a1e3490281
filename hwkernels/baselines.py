"""Link baselines measured in the same run: the copy engine, and NCCL send/recv (peer only).

Both move `nbytes` of pattern words (producer 0, burst 0) into the receiver's buffer and are
checked there by the shared harness before any time is kept.
  copy-engine: peer: `peer_view.copy_(src)` on the source rank (cudaMemcpyAsync into the peer's
               memory mapped into this process); host: a device-to-host copy into the pinned
               host buffer (`buf.cpu.copy_(src)`). One event pair a copy.
  nccl:        dist.send / dist.recv; the receiver times `ops` back-to-back transfers and
               keeps the span from the end of the first to the end of the last, divided by
               ops - 1, so launch skew between the two processes stays out of the sample.
"""

from . import harness
from .pattern import MASK32, torch_check, torch_expected_burst, torch_poison


def pattern_source(nbytes: int, device):
    """A uint8 tensor holding pattern words of (producer 0, burst 0), nbytes long."""
    import torch

    words = torch_expected_burst(0, 1, nbytes, device).view(-1)
    signed = torch.where(words > 0x7FFFFFFF, words - (MASK32 + 1), words)
    return signed.to(torch.int32).view(torch.uint8)


def _measure(ctx, nbytes: int, warmup: int, repeats: int, receiving: bool, transfer):
    """The harness around one transfer kind: the receiver poisons and checks; all ranks agree."""
    from .symm import all_ok, barrier

    recv = ctx.dest.receive_view()

    def poison():
        if receiving:
            torch_poison(recv, nbytes)

    def check(_result):
        return torch_check(recv, 1, nbytes, 1) if receiving else (True, 0.0)

    return harness.measure(transfer, repeats=repeats, warmup=warmup, poison=poison, check=check,
                           sync=barrier, agree=all_ok)


def ce_copy(ctx, src_rank: int, dst_rank: int, nbytes: int, warmup: int, repeats: int, src_buf):
    """Copy-engine transfer; the Measurement's `kernel_us` samples are on the source rank."""
    src = src_buf[:nbytes]
    if ctx.dest.kind == "host":
        dst = ctx.dest.host.cpu[:nbytes]
        receiving = ctx.rank == src_rank
    else:
        dst = ctx.dest.remote(dst_rank)[:nbytes] if ctx.rank == src_rank else None
        receiving = ctx.rank == dst_rank

    def transfer():
        if ctx.rank != src_rank:
            return None
        return {"kernel_us": harness.cuda_event_us(lambda: dst.copy_(src, non_blocking=True))}

    return _measure(ctx, nbytes, warmup, repeats, receiving, transfer)


def nccl_send_recv(ctx, src_rank: int, dst_rank: int, nbytes: int, warmup: int, repeats: int,
                   src_buf, ops: int = 4):
    """NCCL transfer into the receiver's symmetric buffer; samples are on the receiver."""
    import torch
    import torch.distributed as dist

    recv = ctx.dest.receive_view()

    def transfer():
        if ctx.rank == src_rank:
            for _ in range(ops):
                dist.send(src_buf[:nbytes], dst_rank)
            torch.cuda.synchronize()
            return None
        if ctx.rank != dst_rank:
            return None
        events = []
        for _ in range(ops):
            dist.recv(recv[:nbytes], src_rank)
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            events.append(e)
        events[-1].synchronize()
        return {"kernel_us": events[0].elapsed_time(events[-1]) * 1e3 / (ops - 1)}

    return _measure(ctx, nbytes, warmup, repeats, ctx.rank == dst_rank, transfer)
