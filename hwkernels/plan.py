"""The sweep plan: which microbenchmark points a suite runs, in which order (pure data).

Gap sweeps are planned as fractions of the measured zero-gap period P0(K, B) of the same
(K, B, mechanism): the runner measures the zero-gap point first and resolves
gap_us = frac * P0, so the sweep straddles the recovery gap G* = [V/R - T_iss0]+ on any
platform without knowing R in advance. Isolated bursts get a recovery gap long enough to
drain any burst at a pessimistic rate before the next one starts.

Every suite exists for both destinations (`peer`: another GPU over NVLink; `host`: mapped
pinned host memory over PCIe). The host link drains several times slower, so its suite keeps
the same structure with fewer, shorter points (a drain-limited burst lasts ~7x longer), a
pessimistic recovery rate of its own, and only the copy-engine baseline (NCCL has no host
destination). Bulk-copy (tma) points run last in a suite: a mechanism that faults on a
destination then loses nothing measured before it.
"""

from dataclasses import dataclass, replace

from .destination import H200_L2_BYTES, KINDS as DESTINATIONS, ring_bursts

KB = 1024
KINDS = ("periodic", "isolated", "local", "ce-copy", "nccl")
MECHS = ("st.v4", "st.v2", "st.b32", "tma", "copy-engine", "nccl")
TMA_MAX_BYTES = 192 * KB          # staging buffer must fit the 227 KB of shared memory
RECOVERY_RATE_BYTES_PER_US = {"peer": 2e5, "host": 2e4}  # pessimistic drain rates (200, 20 GB/s)

R_FIT_PRODUCERS = (16, 33, 66, 132)
R_FIT_BYTES = tuple(b * KB for b in (4, 8, 16, 32, 64, 128))
GAP_FRACS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0,
             1.05, 1.1, 1.2, 1.35, 1.5, 1.75, 2.0, 3.0)
GAP_CONFIGS = ((132, 32 * KB), (66, 64 * KB), (132, 16 * KB), (33, 32 * KB))
ISO_BYTES = tuple(b * KB for b in (4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56,
                                   64, 72, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256,
                                   320, 384))
TISS_PRODUCERS = (16, 66, 132)
TISS_BYTES = (8 * KB, 32 * KB, 128 * KB)
TISS_THREADS = (128, 256, 512)
BASELINE_BYTES = (132 * 32 * KB, 16 << 20, 64 << 20, 256 << 20, 1 << 30)


@dataclass(frozen=True)
class Point:
    """One measurement point. gap_frac, when set, is resolved against P0 by the runner."""

    kind: str
    producers: int
    burst_bytes: int
    gap_us: float = 0.0
    bursts: int = 64
    warmup_bursts: int = 16
    aligned: bool = True
    mechanism: str = "st.v4"
    threads: int = 256
    target: str = "remote"
    repeats: int = 5
    group: str = ""
    trace: bool = False
    gap_frac: float | None = None
    destination: str = "peer"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f'"kind" must be one of {KINDS}.')
        if self.mechanism not in MECHS:
            raise ValueError(f'"mechanism" must be one of {MECHS}.')
        if self.producers < 1:
            raise ValueError('"producers" must be >= 1.')
        if self.burst_bytes < 16 or self.burst_bytes % 16:
            raise ValueError('"burst_bytes" must be a positive multiple of 16.')
        if not 0 <= self.warmup_bursts < self.bursts:
            raise ValueError('"warmup_bursts" must be in [0, bursts).')
        if self.gap_us < 0:
            raise ValueError('"gap_us" must be >= 0.')
        if self.mechanism == "tma" and self.burst_bytes > TMA_MAX_BYTES:
            raise ValueError(f'"burst_bytes" must be <= {TMA_MAX_BYTES} for tma.')
        if self.target not in ("remote", "local"):
            raise ValueError('"target" must be "remote" or "local".')
        if self.threads < 0 or self.threads > 1024 or self.threads % 32:
            raise ValueError('"threads" must be a multiple of 32 in [0, 1024].')
        if self.destination not in DESTINATIONS:
            raise ValueError(f'"destination" must be one of {DESTINATIONS}.')
        if self.kind == "nccl" and self.destination != "peer":
            raise ValueError('"nccl" baselines need a peer destination.')

    @property
    def volume_bytes(self) -> int:
        return self.producers * self.burst_bytes

    def ring(self, l2_bytes: int = H200_L2_BYTES) -> int:
        """Destination slots of K*B bytes (burst j writes slot j % ring): >= 4x the L2, <= bursts."""
        return ring_bursts(self.volume_bytes, self.bursts, l2_bytes)

    @property
    def dst_bytes(self) -> int:
        """Destination bytes one run writes (every burst a fresh slot of the ring)."""
        if self.kind in ("ce-copy", "nccl"):
            return self.burst_bytes
        return self.ring() * self.producers * self.burst_bytes

    @property
    def where(self) -> str:
        """Where the stores land: 'local' (the control), 'remote' (a peer GPU) or 'host'."""
        if self.target == "local":
            return "local"
        return "remote" if self.destination == "peer" else "host"

    @property
    def key(self) -> str:
        al = "al" if self.aligned else "fr"
        return (f"{self.kind}_{self.mechanism}_K{self.producers}_B{self.burst_bytes // KB}k_"
                f"G{self.gap_us:g}_{al}_t{self.threads}_{self.where}")

    def resolve_gap(self, period0_us: float) -> "Point":
        """The point with gap_us = gap_frac * period0_us (unchanged if no fraction)."""
        if self.gap_frac is None:
            return self
        if not period0_us > 0:
            raise ValueError('"period0_us" must be > 0.')
        return replace(self, gap_us=round(self.gap_frac * period0_us, 3), gap_frac=None)


def recovery_gap_us(volume_bytes: int, destination: str = "peer") -> float:
    """A gap after which any burst of this volume has drained: 3x at the pessimistic rate, plus 20 us."""
    return round(20.0 + 3.0 * volume_bytes / RECOVERY_RATE_BYTES_PER_US[destination], 1)


def isolated(producers: int, burst_bytes: int, group: str, mechanism: str = "st.v4",
             threads: int = 256, target: str = "remote", trace: bool = False,
             destination: str = "peer", bursts: int = 16, warmup: int = 4) -> Point:
    kind = "isolated" if target == "remote" else "local"
    return Point(kind, producers, burst_bytes,
                 gap_us=recovery_gap_us(producers * burst_bytes, destination), bursts=bursts,
                 warmup_bursts=warmup, aligned=True, mechanism=mechanism, threads=threads,
                 target=target, repeats=4, group=group, trace=trace, destination=destination)


TRACED_FREE_ZERO_GAP = ((33, 32 * KB), (66, 64 * KB))
TRACED_ISOLATED = ((132, 20 * KB), (132, 24 * KB), (132, 32 * KB))


@dataclass(frozen=True)
class Shape:
    """How long a destination's periodic points are, and which sizes its sweeps cover."""

    bursts: int
    warmup: int
    gap_fracs: tuple
    iso_bytes: tuple
    iso_bursts: int
    baseline_bytes: tuple


SHAPES = {
    "peer": Shape(64, 16, GAP_FRACS, ISO_BYTES, 16, BASELINE_BYTES),
    "host": Shape(32, 8, (0.0, 0.2, 0.4, 0.6, 0.75, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0),
                  tuple(b * KB for b in (2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 64, 80, 96,
                                         128, 160, 192, 256, 320, 384)),
                  8, BASELINE_BYTES),
}


def zero_gap_grid(mechs=("st.v4",), producers=R_FIT_PRODUCERS, sizes=R_FIT_BYTES,
                  alignments=(True, False), destination="peer") -> list[Point]:
    sh = SHAPES[destination]
    return [Point("periodic", k, b, aligned=al, mechanism=m, group="rfit", bursts=sh.bursts,
                  warmup_bursts=sh.warmup, destination=destination,
                  trace=(not al and m == "st.v4" and (k, b) in TRACED_FREE_ZERO_GAP))
            for m in mechs for k in producers for b in sizes for al in alignments]


def gap_sweep(producers: int, burst_bytes: int, mechanism="st.v4", fracs=None,
              local=True, traced=(0.0, 0.8, 1.0, 2.0), destination="peer") -> list[Point]:
    """Periodic points over gap fractions, aligned and free-running, remote and local."""
    sh = SHAPES[destination]
    fracs = sh.gap_fracs if fracs is None else fracs
    out = []
    targets = ("remote", "local") if local else ("remote",)
    for target in targets:
        kind = "periodic" if target == "remote" else "local"
        for al in (True, False):
            for f in fracs:
                trace = (f in traced and (target == "remote" or f == 0.0)
                         and producers == 132 and burst_bytes == 32 * KB
                         and mechanism == "st.v4")
                out.append(Point(kind, producers, burst_bytes, aligned=al, mechanism=mechanism,
                                 target=target, group="gap", gap_frac=f, trace=trace,
                                 bursts=sh.bursts, warmup_bursts=sh.warmup, destination=destination))
    return out


def baselines(sizes=BASELINE_BYTES, repeats=10, destination="peer") -> list[Point]:
    kinds = ("ce-copy", "nccl") if destination == "peer" else ("ce-copy",)
    return [Point(kind, 1, n, bursts=repeats, warmup_bursts=2, aligned=False,
                  mechanism=kind if kind == "nccl" else "copy-engine", threads=0,
                  repeats=repeats, group="baseline", destination=destination)
            for kind in kinds for n in sizes]


def full_plan(destination: str = "peer") -> list[Point]:
    """The whole calibration sweep (a few device-minutes); bulk-copy points last."""
    d, sh = destination, SHAPES[destination]
    iso = lambda k, b, group, **kw: isolated(k, b, group, destination=d, bursts=sh.iso_bursts,  # noqa: E731
                                             warmup=min(4, sh.iso_bursts // 2), **kw)
    pts = baselines(sizes=sh.baseline_bytes, destination=d)   # first: the flag below needs the CE rate
    pts += zero_gap_grid(destination=d)
    pts += zero_gap_grid(mechs=("st.b32", "st.v2"), producers=(33, 132), alignments=(True,), destination=d)
    for k, b in GAP_CONFIGS:
        pts += gap_sweep(k, b, destination=d)
    for k in R_FIT_PRODUCERS:
        pts += [iso(k, b, "iso", trace=((k, b) in TRACED_ISOLATED)) for b in sh.iso_bytes]
    pts += [iso(132, b, "iso", target="local") for b in sh.iso_bytes]
    for m in ("st.v4", "st.v2", "st.b32"):
        threads = TISS_THREADS + ((1024,) if m == "st.v4" else ())
        for k in TISS_PRODUCERS:
            for b in TISS_BYTES:
                pts += [iso(k, b, "tiss0", mechanism=m, threads=t) for t in threads]
                if k == 132:
                    pts.append(iso(k, b, "tiss0", mechanism=m, target="local"))
    pts += zero_gap_grid(mechs=("tma",), producers=(33, 132), alignments=(True,), destination=d)
    pts += gap_sweep(132, 32 * KB, mechanism="tma", local=False, destination=d)
    pts += [iso(132, b, "iso", mechanism="tma") for b in sh.iso_bytes if b <= TMA_MAX_BYTES]
    for k in TISS_PRODUCERS:
        for b in TISS_BYTES:
            pts += [iso(k, b, "tiss0", mechanism="tma", threads=t) for t in TISS_THREADS]
            if k == 132:
                pts.append(iso(k, b, "tiss0", mechanism="tma", target="local"))
    return pts


def quick_plan(destination: str = "peer") -> list[Point]:
    """A smoke sweep: every kind and mechanism once or twice, a short gap sweep."""
    d, sh = destination, SHAPES[destination]
    pts = baselines(sizes=(132 * 32 * KB, 256 << 20), repeats=5, destination=d)
    pts += [Point("periodic", 132, 32 * KB, aligned=al, mechanism=m, group="rfit", bursts=sh.bursts,
                  warmup_bursts=sh.warmup, destination=d)
            for m in ("st.v4", "st.b32") for al in (True, False)]
    pts += gap_sweep(132, 32 * KB, fracs=(0.0, 0.5, 1.0, 2.0), traced=(1.0,), destination=d)
    pts += [isolated(132, b, "iso", destination=d) for b in (16 * KB, 32 * KB, 64 * KB)]
    pts += [Point("periodic", 132, 32 * KB, aligned=al, mechanism="tma", group="rfit", bursts=sh.bursts,
                  warmup_bursts=sh.warmup, destination=d) for al in (True, False)]
    pts += [isolated(132, 32 * KB, "iso", mechanism="tma", destination=d)]
    return pts


NEWK_PRODUCERS = (24, 48, 99)      # producer counts the full suite never runs (it runs 16, 33, 66, 132)
NEWK_GAP_CONFIGS = ((48, 64 * KB), (99, 32 * KB))


def newk_plan(destination: str = "peer") -> list[Point]:
    """A validation sweep at producer counts the calibration never saw (st.v4, 256 threads):
    zero-gap periods, isolated bursts over the size sweep (one traced per K: where its CTAs
    ran) and two remote gap sweeps, to be predicted by a profile fitted on the full suite."""
    d, sh = destination, SHAPES[destination]
    pts = baselines(sizes=(132 * 32 * KB, 256 << 20), repeats=5, destination=d)
    pts += zero_gap_grid(producers=NEWK_PRODUCERS, destination=d)
    for k, b in NEWK_GAP_CONFIGS:
        pts += gap_sweep(k, b, local=False, traced=(), destination=d)
    for k in NEWK_PRODUCERS:
        pts += [isolated(k, b, "iso", destination=d, bursts=sh.iso_bursts, warmup=min(4, sh.iso_bursts // 2),
                         trace=(b == 32 * KB)) for b in sh.iso_bytes]
    return pts


SUITES = {"full": full_plan, "quick": quick_plan, "newk": newk_plan}
