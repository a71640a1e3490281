"""Reads beside host stores: does an SM's read bandwidth, from the L2 or from HBM, drop while other SMs
store to host memory (GPU only; the kernel's logic also runs under Triton's interpreter)?

    python -m hwkernels.read_beside --out OUT.jsonl [--storers 0,4,16] [--gaps-us 0,20,80]
           [--footprints-mb 8,1024] [--dests host,local] [--repeats 5]

The beside microbenchmark's MoE mainloops run up to twice as long over the host link as in the local
control on some layers, on SMs that store nothing as much as on those that do, and about as much at a
quarter of the link's rate as at three quarters; the Combine's store addresses and L2 hints change
nothing (docs/moe.md, "GEMM tiles beside host stores"). The layers that pay are those whose local
mainloops read at L2-hit speed. This strips the question to reads and stores:

- storers, programs 0..s-1: store 32 KB tiles (bf16, the value ``program + 1``) into their own slots of
  the destination, ``gap`` us apart (a %globaltimer spin), until every reader is done;
- readers, the other programs: read a source of ``footprint`` bytes in [128, 128] bf16 tiles (TMA through
  a host descriptor, pipelined as a mainloop is), ``passes`` times, summing what they read. A small
  footprint (a few MB, every reader reading all of it from its own start) is served by the L2; a large
  one (each reader its own slice) streams from HBM.

Per point (``harness.measure``: poison, launch, check; run 0 untimed): ``read_gbps`` (every reader's
bytes over the readers' window), ``reader_us`` per reader, ``store_gbps`` (the storers' bytes over
their window); checked: every reader's sum against torch's, and every destination slot either
untouched (poison) or its storer's value. The control is the same point with no storers (and with
local storers). Records: experiment "loadgate", kind "read-beside".
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import triton
import triton.language as tl

from .moe_kernels import _now

TILE = 128                    # a [TILE, TILE] bf16 tile: 32 KB, an MoE mainloop's operand tile
TILE_BYTES = TILE * TILE * 2
SLOTS = 64                    # destination slots per storer (2 MB each), reused round robin
MAX_NS = 2_000_000_000        # a storer stops after 2 s, readers done or not (a wrong launch cannot hang)


@triton.jit
def read_beside_kernel(src_desc, src_ptr, dst_ptr, sums_ptr, ns_ptr, rounds_ptr, done_ptr,
                       n_store, n_tiles, reader_tiles, shared, gap_ns, read_gap_ns, max_rounds,
                       N_READS: tl.constexpr, T: tl.constexpr, SLOTS: tl.constexpr, MAX_NS: tl.constexpr,
                       TMA: tl.constexpr, NS: tl.constexpr, CLK: tl.constexpr):
    p = tl.program_id(0)
    n_read = tl.num_programs(0) - n_store
    t0 = _now(CLK)
    offs = tl.arange(0, T)[:, None] * T + tl.arange(0, T)[None, :]
    if p < n_store:
        val = tl.full((T, T), 1.0, tl.float32) * (p + 1).to(tl.float32)
        rounds = 0
        # until every reader is done; never past max_rounds, nor (with a clock) past MAX_NS
        while (tl.load(done_ptr, volatile=True) < n_read) & (rounds < max_rounds) & (_now(CLK) - t0 < MAX_NS):
            slot = p.to(tl.int64) * SLOTS + rounds % SLOTS
            tl.store(dst_ptr + slot * T * T + offs, val.to(tl.bfloat16))
            rounds += 1
            if CLK and gap_ns > 0:     # (no clock under the interpreter: no gap)
                t = _now(CLK)
                while _now(CLK) - t < gap_ns:
                    pass
        tl.store(rounds_ptr + p, rounds)
    else:
        r = p - n_store
        first = r * reader_tiles                      # a slice of its own
        if shared != 0:                               # all tiles, from its own start
            first = (r * (n_tiles // n_read)) % n_tiles
        acc = tl.zeros((T, T), tl.float32)
        for i in tl.range(0, N_READS, num_stages=NS):      # passes x reader_tiles (one compile per footprint)
            tile = (first + i % reader_tiles) % n_tiles
            if TMA:
                x = src_desc.load([tile * T, 0])
            else:
                x = tl.load(src_ptr + tile.to(tl.int64) * T * T + offs)
            acc += x.to(tl.float32)
            if CLK and read_gap_ns > 0:     # a paced reader: a spin after every tile
                t = _now(CLK)
                while _now(CLK) - t < read_gap_ns:
                    pass
        tl.store(sums_ptr + p, tl.sum(tl.sum(acc, axis=1), axis=0))
        tl.atomic_add(done_ptr, 1, sem="release")
    tl.store(ns_ptr + 2 * p, t0)
    tl.store(ns_ptr + 2 * p + 1, _now(CLK))


def reader_plan(footprint_bytes: int, n_read: int) -> tuple[int, int, bool]:
    """(source tiles, tiles per reader pass, shared): a footprint up to 64 MB is shared (every reader reads
    all of it, from its own start: the L2 serves it); a larger one is split into one slice per reader."""
    if n_read < 1 or footprint_bytes < TILE_BYTES:
        raise ValueError("a point needs >= 1 reader and a footprint of >= one 32 KB tile")
    shared = footprint_bytes <= 64 << 20
    if shared:
        n = footprint_bytes // TILE_BYTES
        return n, n, True
    per = footprint_bytes // TILE_BYTES // n_read
    return per * n_read, per, False


def tile_sums(src, n_tiles: int):
    """The sum of each of the first ``n_tiles`` [T, T] tiles of ``src`` [rows, T] (float64, on the CPU)."""
    import torch

    tiles = src[:n_tiles * TILE].view(n_tiles, TILE, TILE)
    return torch.cat([c.float().sum(dim=(1, 2)) for c in tiles.split(1024)]).double().cpu()


def expected_sums(per_tile, n_read: int, reader_tiles: int, shared: bool, passes: int):
    """Each reader's sum as the kernel forms it, from ``tile_sums`` of its source (order aside)."""
    import torch

    n = len(per_tile)
    out = []
    for r in range(n_read):
        first = (r * (n // n_read)) % n if shared else r * reader_tiles
        idx = (first + torch.arange(reader_tiles)) % n
        out.append(float(per_tile[idx].sum()) * passes)
    return np.array(out)


class Point:
    """One (storers, gap, footprint, dest) launch with its buffers; ``run`` times and ``check`` verifies.
    ``sums``: ``tile_sums`` of the source for its footprint when the caller has them (points share them)."""

    def __init__(self, n_programs: int, n_store: int, gap_us: float, footprint_bytes: int, dst, src,
                 passes: int, tma: bool = True, stages: int = 4, max_rounds: int = 1 << 30, read_gap_ns: int = 0,
                 sums=None):
        import torch

        self.n_programs, self.n_store, self.dst, self.src, self.passes = n_programs, n_store, dst, src, passes
        self.n_read = n_programs - n_store
        self.n_tiles, self.reader_tiles, self.shared = reader_plan(footprint_bytes, self.n_read)
        if self.n_tiles * TILE_BYTES > src.numel() * 2:
            raise ValueError("the source is smaller than the footprint")
        if n_store and dst.numel() < n_store * SLOTS * TILE * TILE:
            raise ValueError("the destination is smaller than the storers' slots")
        dev = src.device
        self.sums = torch.zeros(n_programs, dtype=torch.float32, device=dev)
        self.ns = torch.zeros(2 * n_programs, dtype=torch.int64, device=dev)
        self.rounds = torch.zeros(n_programs, dtype=torch.int32, device=dev)
        self.done = torch.zeros(1, dtype=torch.int32, device=dev)
        self.gap_ns, self.tma, self.stages, self.max_rounds = int(gap_us * 1e3), tma, stages, max_rounds
        self.read_gap_ns = int(read_gap_ns)
        self.desc = self._desc() if tma else src
        per_tile = tile_sums(src, self.n_tiles) if sums is None else sums
        self.expected = expected_sums(per_tile, self.n_read, self.reader_tiles, self.shared, passes)

    def _desc(self):
        from triton.tools.tensor_descriptor import TensorDescriptor

        return TensorDescriptor.from_tensor(self.src, [TILE, TILE])

    def enqueue(self):
        from .moe import interpreting

        self.done.zero_()
        self.rounds.zero_()
        read_beside_kernel[(self.n_programs,)](
            self.desc, self.src, self.dst, self.sums, self.ns, self.rounds, self.done, self.n_store,
            self.n_tiles, self.reader_tiles, int(self.shared), self.gap_ns, self.read_gap_ns, self.max_rounds,
            N_READS=self.passes * self.reader_tiles,
            T=TILE, SLOTS=SLOTS, MAX_NS=MAX_NS, TMA=self.tma, NS=self.stages, CLK=not interpreting(),
            **({} if interpreting() else {"num_warps": 8}))

    def check(self, _=None) -> tuple[bool, float]:
        """Every reader's sum against torch's (relative error), every written slot its storer's value."""
        import torch

        got = self.sums[self.n_store:].double().cpu().numpy()
        scale = np.maximum(np.abs(self.expected), 1.0)
        err = float(np.max(np.abs(got - self.expected) / scale))
        ok = err < 1e-3
        if self.n_store:
            slots = self.dst[:self.n_store * SLOTS * TILE * TILE].view(self.n_store, SLOTS * TILE * TILE).float()
            want = torch.arange(1, self.n_store + 1, device=slots.device, dtype=torch.float32)[:, None]
            ok &= bool(((slots == want) | torch.isnan(slots)).all()) and bool((self.rounds[:self.n_store] > 0).all())
        return ok, err

    def samples(self, kernel_us: float) -> dict:
        """The launch's rates from the programs' %globaltimer edges (ns since 1970: integers first)."""
        edges = self.ns.view(-1, 2).cpu().numpy()
        readers = edges[self.n_store:]
        read_bytes = self.n_read * self.reader_tiles * self.passes * TILE_BYTES
        out = {"kernel_us": kernel_us, "reader_us": (readers[:, 1] - readers[:, 0]) / 1e3,
               "read_gbps": read_bytes / _window_ns(readers)}
        if self.n_store:
            stored = int(self.rounds[:self.n_store].sum()) * TILE_BYTES
            out["store_gbps"] = stored / _window_ns(edges[:self.n_store])
        return out


def _window_ns(edges: np.ndarray) -> float:
    """First start to last end of [n, 2] ns edges (NaN for a launch without a clock)."""
    w = float(edges[:, 1].max() - edges[:, 0].min())
    return w if w > 0 else float("nan")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="hwkernels.read_beside", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="records file (JSONL), appended to")
    ap.add_argument("--storers", default="4,16,33", help="storing programs (the rest read)")
    ap.add_argument("--gaps-us", default="0,10,40", help="each storer's spin between two 32 KB tiles")
    ap.add_argument("--footprints-mb", default="8,1024", help="<= 64: shared (L2); larger: one slice per reader")
    ap.add_argument("--dests", default="host,local")
    ap.add_argument("--read-gaps-ns", default="0", help="each reader's spin after every tile (paced readers)")
    ap.add_argument("--loads", choices=("tma", "pointer"), default="tma")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    try:
        args.storers = [int(x) for x in args.storers.split(",") if x]
        args.gaps_us = [float(x) for x in args.gaps_us.split(",") if x]
        args.footprints_mb = [float(x) for x in args.footprints_mb.split(",") if x]
        args.read_gaps_ns = [int(x) for x in args.read_gaps_ns.split(",") if x]
    except ValueError:
        ap.error("--storers, --gaps-us, --footprints-mb and --read-gaps-ns are comma-separated numbers")
    if not args.read_gaps_ns or any(r < 0 for r in args.read_gaps_ns):
        ap.error("--read-gaps-ns >= 0")
    args.dests = [d for d in args.dests.split(",") if d]
    if not args.dests or any(d not in ("host", "local") for d in args.dests):
        ap.error("--dests: host and/or local")
    if not args.storers or any(s < 1 for s in args.storers) or any(g < 0 for g in args.gaps_us) or not args.gaps_us:
        ap.error("--storers >= 1, --gaps-us >= 0")
    if not args.footprints_mb or any(f * 2**20 < TILE_BYTES for f in args.footprints_mb):
        ap.error("--footprints-mb: at least one 32 KB tile each")
    if args.passes < 1 or args.repeats < 1:
        ap.error("--passes >= 1, --repeats >= 1")
    return args


def plan(args, programs: int) -> list[tuple[int, float, int, str, int]]:
    """(storers, gap us, footprint bytes, dest, read gap ns) per point: per footprint and read gap the
    no-store control first."""
    out = []
    for mb in args.footprints_mb:
        fp = int(mb * 2**20)
        for r in args.read_gaps_ns:
            out.append((0, 0.0, fp, "none", r))
            out += [(s, g, fp, d, r) for s in args.storers if s < programs for g in args.gaps_us for d in args.dests]
    return out


def main(argv=None) -> int:
    import torch

    from . import records
    from .destination import host_buffer
    from .harness import measure
    from .moe_bench_io import one_gpu_session
    from .moe_gemm import _events_us

    args = parse_args(argv)
    device, sms, commit, dirty, plat = one_gpu_session()
    points = plan(args, sms)
    src = torch.rand(int(max(args.footprints_mb) * 2**20) // (2 * TILE), TILE, device=device).to(torch.bfloat16)
    n_dst = max(args.storers) * SLOTS * TILE * TILE
    host = host_buffer(2 * n_dst, device)        # held: the pinned memory lives as long as this buffer
    dsts = {"host": host.cuda.view(torch.bfloat16), "local": torch.empty(n_dst, dtype=torch.bfloat16, device=device),
            "none": torch.empty(1, dtype=torch.bfloat16, device=device)}
    rows = []
    sums = {}                                    # tile_sums per tile count: the source's, computed once
    for s, gap, fp, dest, rgap in points:
        n_tiles = reader_plan(fp, sms - s)[0]
        if n_tiles not in sums:
            sums[n_tiles] = tile_sums(src, n_tiles)
        pt = Point(sms, s, gap, fp, dsts[dest], src, args.passes, tma=args.loads == "tma", read_gap_ns=rgap,
                   sums=sums[n_tiles])
        dst = dsts[dest]

        def run(pt=pt):
            us = _events_us(pt.enqueue)
            torch.cuda.synchronize()
            return pt.samples(us)

        m = measure(run, args.repeats, warmup=1, poison=lambda dst=dst: dst.fill_(float("nan")), check=pt.check)
        p = {"storers": s, "readers": sms - s, "programs": sms, "gap_us": gap, "footprint_mb": fp / 2**20,
             "read_gap_ns": rgap,
             "shared": pt.shared, "destination": dest, "passes": args.passes, "loads": args.loads,
             "repeats": args.repeats, "tile_bytes": TILE_BYTES}
        st = m.stats_dicts()
        records.append_record(args.out, records.make_record("loadgate", "read-beside", p, st, m.check_dict(),
                                                            plat, commit, dirty))
        med = {k: v["median"] for k, v in (st or {}).items()}
        rows.append((fp / 2**20, rgap, dest, s, gap, m.ok, med, pt.reader_tiles * args.passes * TILE_BYTES))
        print(f"footprint {fp / 2**20:g} MB read gap {rgap} ns {dest} storers {s} gap {gap:g}: ok={m.ok} "
              f"err={m.max_abs_err:.2g} "
              + " ".join(f"{k}={v:.4g}" for k, v in med.items()), flush=True)
    print_table(rows)
    return 0 if all(r[5] for r in rows) else 1


def print_table(rows):
    """Per point: per-reader GB/s (median reader), over the no-store control of its footprint and read gap,
    and the store rate."""
    nan = float("nan")
    base = {(fp, r): nbytes / med.get("reader_us", nan) / 1e3
            for fp, r, dest, *_, med, nbytes in rows if dest == "none"}
    print("| footprint MB | read gap ns | dest | storers | gap us | ok | GB/s per reader | / no stores | store GB/s |")
    print("| ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for fp, r, dest, s, gap, ok, med, nbytes in rows:
        per = nbytes / med.get("reader_us", nan) / 1e3
        print(f"| {fp:g} | {r} | {dest} | {s} | {gap:g} | {ok} | {per:.1f} | {per / base.get((fp, r), nan):.3f} | "
              f"{med.get('store_gbps', nan):.1f} |")


if __name__ == "__main__":
    sys.exit(main())
