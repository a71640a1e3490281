"""The sweep plan: which microbenchmark points a suite runs, in which order (pure data).

Gap sweeps are planned as fractions of the measured zero-gap period P0(K, B) of the same
(K, B, mechanism): the runner measures the zero-gap point first and resolves
gap_us = frac * P0, so the sweep straddles the recovery gap G* = [V/R - T_iss0]+ on any
platform without knowing R in advance. Isolated bursts get a recovery gap long enough to
drain any burst at a pessimistic rate before the next one starts.
"""

from dataclasses import dataclass, replace

KB = 1024
KINDS = ("periodic", "isolated", "local", "ce-copy", "nccl")
MECHS = ("st.v4", "st.v2", "st.b32", "tma", "copy-engine", "nccl")
TMA_MAX_BYTES = 192 * KB          # staging buffer must fit the 227 KB of shared memory
RECOVERY_RATE_BYTES_PER_US = 2e5  # 200 GB/s: pessimistic drain rate for isolated gaps

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

    @property
    def volume_bytes(self) -> int:
        return self.producers * self.burst_bytes

    @property
    def dst_bytes(self) -> int:
        """Destination bytes one run writes (every burst a fresh slot)."""
        if self.kind in ("ce-copy", "nccl"):
            return self.burst_bytes
        return self.bursts * self.producers * self.burst_bytes

    @property
    def key(self) -> str:
        al = "al" if self.aligned else "fr"
        return (f"{self.kind}_{self.mechanism}_K{self.producers}_B{self.burst_bytes // KB}k_"
                f"G{self.gap_us:g}_{al}_t{self.threads}_{self.target}")

    def resolve_gap(self, period0_us: float) -> "Point":
        """The point with gap_us = gap_frac * period0_us (unchanged if no fraction)."""
        if self.gap_frac is None:
            return self
        if not period0_us > 0:
            raise ValueError('"period0_us" must be > 0.')
        return replace(self, gap_us=round(self.gap_frac * period0_us, 3), gap_frac=None)


def recovery_gap_us(volume_bytes: int) -> float:
    """A gap after which any burst of this volume has drained: 3x at 200 GB/s, plus 20 us."""
    return round(20.0 + 3.0 * volume_bytes / RECOVERY_RATE_BYTES_PER_US, 1)


def isolated(producers: int, burst_bytes: int, group: str, mechanism: str = "st.v4",
             threads: int = 256, target: str = "remote", trace: bool = False) -> Point:
    kind = "isolated" if target == "remote" else "local"
    return Point(kind, producers, burst_bytes, gap_us=recovery_gap_us(producers * burst_bytes),
                 bursts=16, warmup_bursts=4, aligned=True, mechanism=mechanism,
                 threads=threads, target=target, repeats=4, group=group, trace=trace)


TRACED_FREE_ZERO_GAP = ((33, 32 * KB), (66, 64 * KB))
TRACED_ISOLATED = ((132, 20 * KB), (132, 24 * KB), (132, 32 * KB))


def zero_gap_grid(mechs=("st.v4",), producers=R_FIT_PRODUCERS, sizes=R_FIT_BYTES,
                  alignments=(True, False)) -> list[Point]:
    return [Point("periodic", k, b, aligned=al, mechanism=m, group="rfit",
                  trace=(not al and m == "st.v4" and (k, b) in TRACED_FREE_ZERO_GAP))
            for m in mechs for k in producers for b in sizes for al in alignments]


def gap_sweep(producers: int, burst_bytes: int, mechanism="st.v4", fracs=GAP_FRACS,
              local=True, traced=(0.0, 0.8, 1.0, 2.0)) -> list[Point]:
    """Periodic points over gap fractions, aligned and free-running, remote and local."""
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
                                 target=target, group="gap", gap_frac=f, trace=trace))
    return out


def baselines(sizes=BASELINE_BYTES, repeats=10) -> list[Point]:
    return [Point(kind, 1, n, bursts=repeats, warmup_bursts=2, aligned=False,
                  mechanism=kind if kind == "nccl" else "copy-engine", threads=0,
                  repeats=repeats, group="baseline")
            for kind in ("ce-copy", "nccl") for n in sizes]


def full_plan() -> list[Point]:
    """The whole calibration sweep (a few device-minutes)."""
    pts = zero_gap_grid()
    pts += zero_gap_grid(mechs=("st.b32", "st.v2", "tma"), producers=(33, 132),
                         alignments=(True,))
    for k, b in GAP_CONFIGS:
        pts += gap_sweep(k, b)
    pts += gap_sweep(132, 32 * KB, mechanism="tma", local=False)
    for k in R_FIT_PRODUCERS:
        pts += [isolated(k, b, "iso", trace=((k, b) in TRACED_ISOLATED)) for b in ISO_BYTES]
    pts += [isolated(132, b, "iso", mechanism="tma") for b in ISO_BYTES if b <= TMA_MAX_BYTES]
    pts += [isolated(132, b, "iso", target="local") for b in ISO_BYTES]
    for m in ("st.v4", "st.v2", "st.b32", "tma"):
        threads = TISS_THREADS + ((1024,) if m == "st.v4" else ())
        for k in TISS_PRODUCERS:
            for b in TISS_BYTES:
                pts += [isolated(k, b, "tiss0", mechanism=m, threads=t) for t in threads]
                if k == 132:
                    pts.append(isolated(k, b, "tiss0", mechanism=m, target="local"))
    pts += baselines()
    return pts


def quick_plan() -> list[Point]:
    """A smoke sweep: every kind and mechanism once or twice, a short gap sweep."""
    pts = [Point("periodic", 132, 32 * KB, aligned=al, mechanism=m, group="rfit")
           for m in ("st.v4", "st.b32", "tma") for al in (True, False)]
    pts += gap_sweep(132, 32 * KB, fracs=(0.0, 0.5, 1.0, 2.0), traced=(1.0,))
    pts += [isolated(132, b, "iso") for b in (16 * KB, 32 * KB, 64 * KB)]
    pts += [isolated(132, 32 * KB, "iso", mechanism="tma")]
    pts += baselines(sizes=(132 * 32 * KB, 256 << 20), repeats=5)
    return pts


SUITES = {"full": full_plan, "quick": quick_plan}
