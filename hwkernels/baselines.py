"""Link baselines measured in the same run: copy-engine peer copy and NCCL send/recv.

Both move `nbytes` from the source rank's GPU into the destination rank's symmetric buffer
and are checked there against the pattern of (producer 0, burst 0) before any time is kept.
  copy-engine: `peer_view.copy_(src)` on the source rank, a cudaMemcpyAsync between a local
               buffer and the peer's memory mapped into this process; one event pair a copy.
  nccl:        dist.send / dist.recv; the receiver times `ops` back-to-back transfers and
               keeps the span from the end of the first to the end of the last, divided by
               ops - 1, so launch skew between the two processes stays out of the sample.
"""

from .pattern import MASK32, torch_check, torch_expected_burst, torch_poison


def pattern_source(nbytes: int, device):
    """A uint8 tensor holding pattern words of (producer 0, burst 0), nbytes long."""
    import torch

    words = torch_expected_burst(0, 1, nbytes, device).view(-1)
    signed = torch.where(words > 0x7FFFFFFF, words - (MASK32 + 1), words)
    return signed.to(torch.int32).view(torch.uint8)


def _check_received(d, dst_rank: int, nbytes: int) -> tuple[bool, float]:
    """After a transfer: the destination checks its bytes against the reference; all ranks agree."""
    from .symm import all_ok, barrier

    barrier()
    ok, err = (True, 0.0)
    if d.rank == dst_rank:
        ok, err = torch_check(d.symm, 1, nbytes, 1)
    return all_ok(ok, err)


def ce_copy(d, src_rank: int, dst_rank: int, nbytes: int, warmup: int, repeats: int,
            src_buf) -> tuple[bool, float, list[float]]:
    """Returns (ok, max_abs_err, per-copy microseconds on the source rank)."""
    import torch

    from .symm import barrier

    if d.rank == dst_rank:
        torch_poison(d.symm, nbytes)
    barrier()
    samples = []
    if d.rank == src_rank:
        dst = d.peer_view(dst_rank)[:nbytes]
        src = src_buf[:nbytes]
        for i in range(warmup + repeats):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            dst.copy_(src, non_blocking=True)
            b.record()
            b.synchronize()
            if i >= warmup:
                samples.append(a.elapsed_time(b) * 1e3)
    ok, err = _check_received(d, dst_rank, nbytes)
    return ok, err, samples


def nccl_send_recv(d, src_rank: int, dst_rank: int, nbytes: int, warmup: int, repeats: int,
                   src_buf, ops: int = 4) -> tuple[bool, float, list[float]]:
    """Returns (ok, max_abs_err, per-transfer microseconds measured on the receiver)."""
    import torch
    import torch.distributed as dist

    from .symm import barrier

    if d.rank == dst_rank:
        torch_poison(d.symm, nbytes)
    barrier()
    samples = []
    for rep in range(warmup + repeats):
        barrier()
        if d.rank == src_rank:
            for _ in range(ops):
                dist.send(src_buf[:nbytes], dst_rank)
            torch.cuda.synchronize()
        elif d.rank == dst_rank:
            events = []
            for _ in range(ops):
                dist.recv(d.symm[:nbytes], src_rank)
                e = torch.cuda.Event(enable_timing=True)
                e.record()
                events.append(e)
            events[-1].synchronize()
            if rep >= warmup:
                samples.append(events[0].elapsed_time(events[-1]) * 1e3 / (ops - 1))
    ok, err = _check_received(d, dst_rank, nbytes)
    return ok, err, samples
