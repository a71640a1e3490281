"""Drain rate of row-segment stores (the MoE Combine's pattern) against contiguous stores, one GPU.

    python -m hwkernels.segment_rate --out RECORDS.jsonl [--row-bytes 4096,8192,16384] [--repeats 8]

The fused MoE kernel's Combine writes each Linear-2 tile as ``block_m`` row segments of
``block_n2 * 2`` = 256 bytes, one per token, at the row stride of the token's output row
(``hidden * 2`` bytes: 4-14 KB); the microbenchmarks that calibrate R write contiguous bursts.
This runner streams the same bytes into the same mapped host buffer both ways, zero gap, and
times each launch with CUDA events: one program per SM, ``segments_per_program`` segments each,
``BLOCK`` segments per store (a [16, 128] int16 block, 16-byte vectors per thread, as a Combine
tile's epilogue stores its rows), every segment written once per launch (fresh addresses: the buffer spans >= 4x the L2).

- ``contiguous``: segment g at byte ``g * 256`` (a program's segments are consecutive);
- ``rows``: the buffer as ``[rows, row_bytes]``, segment g at row ``g % rows``, column
  ``g // rows`` (a program's consecutive segments sit one row apart, as a Combine tile's do).

Each segment holds ``(g * 131 + lane) & 0x7fff`` (int16 lanes), checked on the host after every
launch (the harness refuses a time for a wrong result). Records: experiment ``micro``, kind
``segments``, params ``pattern``, ``row_bytes``, ``segment_bytes``, ``bytes``; ``gbps`` the median
rate. The ratio rows / contiguous is the MoE builder's ``combine_rate_scale``.
"""

from __future__ import annotations

import argparse
import functools
import os

import numpy as np

SEGMENT_BYTES = 256
LANES = SEGMENT_BYTES // 2          # int16 lanes per segment
BLOCK = 16                          # segments per store instruction batch (16-byte vectors per thread)


@functools.lru_cache(maxsize=None)
def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def segments_kernel(dst, per_program, rows, row_elems, ROWS: tl.constexpr, LANES: tl.constexpr,
                        BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        lanes = tl.arange(0, LANES)
        for i in range(0, per_program, BLOCK):      # BLOCK segments per store, as a tile's rows
            g = pid * per_program + i + tl.arange(0, BLOCK)
            if ROWS:   # row_elems a kernel argument: Triton knows it divides by 16 and vectorizes
                offset = (g % rows) * row_elems + (g // rows) * LANES
            else:
                offset = g * LANES
            values = (g[:, None] * 131 + lanes[None, :]) & 0x7FFF
            tl.store(dst + offset[:, None] + lanes[None, :], values.to(tl.int16))
    return segments_kernel


def layout(programs: int, per_program: int, row_bytes: int) -> tuple[int, int]:
    """(segments, rows) of one launch; rows * row_bytes covers every segment exactly once."""
    segments = programs * per_program
    per_row = row_bytes // SEGMENT_BYTES
    if row_bytes % SEGMENT_BYTES or segments % per_row:
        raise ValueError(f'"row_bytes" ({row_bytes}) must be a multiple of {SEGMENT_BYTES} whose '
                         f'segments per row divide the launch\'s {segments} segments.')
    return segments, segments // per_row


def expected(segments: int, rows: int, pattern: str) -> np.ndarray:
    """int16[segments * LANES]: the buffer after one launch (host-side reference)."""
    g = np.arange(segments, dtype=np.int64)
    values = ((g[:, None] * 131 + np.arange(LANES)[None, :]) & 0x7FFF).astype(np.int16)
    if pattern == "contiguous":
        return values.reshape(-1)
    out = np.empty((rows, segments // rows, LANES), np.int16)
    out[g % rows, g // rows] = values
    return out.reshape(-1)


def launch(dst, programs: int, per_program: int, rows: int, pattern: str) -> None:
    from .fa import _interpreter_compat

    _interpreter_compat()   # a no-op on the GPU; Triton 3.6's interpreter with numpy >= 2.3 needs it
    if per_program % BLOCK:
        raise ValueError(f'"per_program" must be a multiple of {BLOCK}, got {per_program}.')
    row_elems = programs * per_program // rows * LANES
    _kernel()[(programs,)](dst, per_program, rows, row_elems, ROWS=pattern == "rows", LANES=LANES, BLOCK=BLOCK,
                           num_warps=4)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="hwkernels.segment_rate", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="records file (JSONL), appended to")
    ap.add_argument("--row-bytes", default="4096,8192,16384", help="row strides of the rows pattern")
    ap.add_argument("--per-program", type=int, default=8192, help="segments per program per launch")
    ap.add_argument("--repeats", type=int, default=8)
    return ap.parse_args(argv)


def main(argv=None) -> int:
    import torch

    from . import destination, harness, platform_info, records

    args = parse_args(argv)
    dev = torch.device("cuda", 0)
    programs = torch.cuda.get_device_properties(dev).multi_processor_count
    strides = [int(x) for x in args.row_bytes.split(",") if x]
    segments = programs * args.per_program
    nbytes = segments * SEGMENT_BYTES
    buf = destination.host_buffer(nbytes, dev)
    dst = buf.cuda.view(torch.int16)
    host = buf.cpu.view(torch.int16)
    plat = platform_info.platform(1, platform_info.smi_sm_clock_mhz(), 0, destination="host")
    commit = os.environ.get("XSTAGE_COMMIT", "unknown")
    print(f"# {programs} programs x {args.per_program} segments of {SEGMENT_BYTES} B = {nbytes / 2**20:.0f} MiB "
          f"per launch into host memory; link {plat.get('link')}")
    rates = {}
    for pattern, row_bytes in [("contiguous", 0)] + [("rows", s) for s in strides]:
        _, rows = layout(programs, args.per_program, row_bytes or SEGMENT_BYTES)
        ref = torch.from_numpy(expected(segments, rows, pattern))

        def run():
            return {"kernel_us": harness.cuda_event_us(lambda: launch(dst, programs, args.per_program, rows,
                                                                      pattern))}

        def check(_result):
            torch.cuda.synchronize()
            ok = bool(torch.equal(host, ref))
            return ok, 0.0 if ok else float("inf")

        m = harness.measure(run, repeats=args.repeats, warmup=1, poison=lambda: host.fill_(-1), check=check)
        params = {"pattern": pattern, "row_bytes": row_bytes, "segment_bytes": SEGMENT_BYTES, "bytes": nbytes,
                  "programs": programs, "segments_per_program": args.per_program, "destination": "host",
                  "repeats": args.repeats}
        gbps = nbytes / (m.stats["kernel_us"].median * 1e3) if m.ok else None
        rec = records.make_record("micro", "segments", params, m.stats_dicts(),
                                  m.check_dict(), plat, commit, None, gbps=gbps)
        records.append_record(args.out, rec)
        rates[(pattern, row_bytes)] = gbps
        print(f"{pattern:10s} row {row_bytes:6d} B  ok={m.ok}  "
              + (f"median {m.stats['kernel_us'].median:9.1f} us  {gbps:6.2f} GB/s" if m.ok else "CHECK FAILED"))
    base = rates.get(("contiguous", 0))
    for (pattern, row_bytes), g in rates.items():
        if pattern == "rows" and g and base:
            print(f"rows {row_bytes} B / contiguous: {g / base:.4f}")
    return 0 if all(rates.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
