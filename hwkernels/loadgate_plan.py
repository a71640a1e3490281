"""The load-gate sweep: which points run, in which order (pure data, no GPU).

A point: ``ctas`` CTAs (one per SM, or two per SM in the co-resident mode), ``storers`` of them
store ``burst_bytes`` each to ``destination`` (host: mapped pinned host memory over PCIe; local:
this GPU's HBM), then, after an optional fence or a gap spin of ``gap_us``, the loading CTAs each
stream ``load_bytes`` of device memory (``load`` = ld.v4 pointer loads or tma bulk loads).

Variants (``variant``): ``main`` (every CTA stores then loads; B = 0 is the load phase alone),
``local`` (the same stores into local HBM), ``fence`` (fence.sc.sys between stores and loads),
``gap`` (a spin of gap_us), ``bystander`` (the first ``storers`` CTAs store, the other CTAs on
other SMs only load), ``cosm`` (two CTAs per SM: one stores, the other loads once it has),
``late`` (set A, the first ``storers`` CTAs, stores then loads as ``main``; set C, the other CTAs,
loads nothing: it spins ``late_delay_us`` from the grid barrier, then stores ``late_bytes`` per
CTA, while A's loads wait), ``stream`` (the same with ``late_bursts`` bursts per C CTA, a spin of
``late_spin_us`` between two). The last two separate a gate on the link's occupancy (A waits for
C's bytes too) from a FIFO (A waits only for the bytes accepted before its loads). ``late-fence``:
``late`` with a fence.sc.sys between A's stores and its loads (C's bytes arrive while A's fences
wait): does a fence wait for bytes accepted after it began (the link empty), or only for those
ahead of it, the loads then held by the load gate? ``stream-fence``: ``stream`` with that fence (C
streams bursts at about the link's rate while A's fences wait: a fused-and-fenced program's view of
the staggered programs after it).
"""

from __future__ import annotations

from dataclasses import dataclass

KIB = 1024
VARIANTS = ("main", "local", "fence", "gap", "bystander", "cosm", "late", "stream", "late-fence", "stream-fence")
LATE_VARIANTS = ("late", "stream", "late-fence", "stream-fence")
LOADS = ("ld.v4", "tma")
SWEEP_BYTES = tuple(b * KIB for b in (0, 4, 8, 16, 32, 64))
SWEEP_CTAS = (1, 16, 66, 132)
SWEEP_LOAD_BYTES = (64 * KIB, 256 * KIB, 1024 * KIB)
CONTROL_LOAD_BYTES = 256 * KIB
PLAN_DRAIN_GBPS = 52.4            # the shipped h200-pcie-host profile's R: only places the gap sweep
GAP_FRACS = (0.25, 0.5, 0.75, 1.0, 1.25)
GAP_CONFIGS = ((132, 16 * KIB), (132, 32 * KIB), (132, 64 * KIB), (66, 32 * KIB), (66, 64 * KIB))


@dataclass(frozen=True)
class Point:
    variant: str
    ctas: int
    burst_bytes: int
    load_bytes: int
    storers: int | None = None      # None: every CTA (cosm: one per SM)
    gap_us: float = 0.0
    load: str = "ld.v4"
    threads: int = 256
    repeats: int = 20
    late_bytes: int = 0             # late/stream: bytes per burst of a set-C CTA
    late_delay_us: float = 0.0      # its spin from the grid barrier to its first store
    late_bursts: int = 1
    late_spin_us: float = 0.0       # its spin between two bursts

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f'"variant" must be one of {VARIANTS}.')
        if self.load not in LOADS:
            raise ValueError(f'"load" must be one of {LOADS}.')
        if self.ctas < 1 or self.burst_bytes < 0 or self.burst_bytes % 16 or self.load_bytes <= 0:
            raise ValueError('"ctas" must be >= 1, "burst_bytes" a multiple of 16 >= 0, "load_bytes" > 0.')
        if self.gap_us < 0:
            raise ValueError('"gap_us" must be >= 0.')
        if self.storers is not None and not 0 <= self.storers <= self.ctas:
            raise ValueError('"storers" must be in [0, ctas].')
        late = self.variant in LATE_VARIANTS
        if late and (self.storers is None or self.storers >= self.ctas):
            raise ValueError('"storers" must be < ctas in the late variants (set C is the rest).')
        if self.late_bytes < 0 or self.late_bytes % 16 or self.late_bursts < 1 or self.late_delay_us < 0 \
                or self.late_spin_us < 0:
            raise ValueError('"late_bytes" must be a multiple of 16 >= 0, "late_bursts" >= 1, the spins >= 0.')
        if not late and (self.late_bytes or self.late_delay_us or self.late_bursts != 1 or self.late_spin_us):
            raise ValueError('the "late_*" fields belong to the late variants.')

    @property
    def mode(self) -> str:
        if self.variant in LATE_VARIANTS:
            return "late"
        return "cosm" if self.variant == "cosm" else "solo"

    @property
    def destination(self) -> str:
        return "local" if self.variant == "local" else "host"

    @property
    def fence(self) -> bool:
        return self.variant in ("fence", "late-fence", "stream-fence")

    @property
    def store_ctas(self) -> int:
        """CTAs that store (slots written)."""
        if self.variant == "cosm":
            return self.ctas // 2
        return self.ctas if self.storers is None else self.storers

    @property
    def late_ctas(self) -> int:
        """Set C of the late variants (0 elsewhere)."""
        return self.ctas - self.store_ctas if self.variant in LATE_VARIANTS else 0

    @property
    def volume_bytes(self) -> int:
        """A's slots, then C's bursts (burst-major)."""
        return self.store_ctas * self.burst_bytes + self.late_ctas * self.late_bursts * self.late_bytes

    @property
    def key(self) -> str:
        parts = [self.variant, f"K{self.ctas}", f"B{self.burst_bytes // KIB}K", f"L{self.load_bytes // KIB}K"]
        if self.storers is not None:
            parts.append(f"S{self.storers}")
        if self.gap_us:
            parts.append(f"G{self.gap_us:g}")
        if self.variant in LATE_VARIANTS:
            parts += [f"C{self.late_bytes // KIB}K", f"D{self.late_delay_us:g}"]
            if self.variant in ("stream", "stream-fence"):
                parts += [f"N{self.late_bursts}", f"P{self.late_spin_us:g}"]
        if self.load != "ld.v4":
            parts.append(self.load)
        return "_".join(parts)

    def params(self) -> dict:
        return {"variant": self.variant, "producers": self.store_ctas, "ctas": self.ctas,
                "burst_bytes": self.burst_bytes, "load_bytes": self.load_bytes, "gap_us": self.gap_us,
                "fence": self.fence, "mode": self.mode, "load": self.load, "mechanism": "st.v4",
                "threads": self.threads, "destination": self.destination,
                **({"late_ctas": self.late_ctas, "late_bytes": self.late_bytes, "late_delay_us": self.late_delay_us,
                    "late_bursts": self.late_bursts, "late_spin_us": self.late_spin_us}
                   if self.variant in LATE_VARIANTS else {})}


def gap_us(ctas: int, burst_bytes: int, frac: float) -> float:
    """frac x the drain time of the burst at the profile's rate (B K / R), rounded to 0.1 us."""
    return round(frac * ctas * burst_bytes / (PLAN_DRAIN_GBPS * 1e3), 1)


def full_plan() -> list[Point]:
    pts = [Point("main", k, b, ll) for k in SWEEP_CTAS for ll in SWEEP_LOAD_BYTES for b in SWEEP_BYTES]
    pts += [Point("local", k, b, CONTROL_LOAD_BYTES) for k in SWEEP_CTAS for b in SWEEP_BYTES if b]
    pts += [Point("fence", k, b, CONTROL_LOAD_BYTES) for k in SWEEP_CTAS for b in SWEEP_BYTES]
    pts += [Point("bystander", 132, b, CONTROL_LOAD_BYTES, storers=s) for s in (66, 16) for b in SWEEP_BYTES if b]
    pts += [Point("gap", k, b, CONTROL_LOAD_BYTES, gap_us=gap_us(k, b, f)) for k, b in GAP_CONFIGS for f in GAP_FRACS]
    # last: the two launch shapes the rest does not use (bulk loads; two CTAs per SM)
    pts += [Point("main", k, b, CONTROL_LOAD_BYTES, load="tma") for k in (16, 132) for b in SWEEP_BYTES]
    pts += [Point("cosm", 264, b, CONTROL_LOAD_BYTES) for b in SWEEP_BYTES]
    return pts


def quick_plan() -> list[Point]:
    return [Point("main", 132, b, CONTROL_LOAD_BYTES, repeats=3) for b in (0, 32 * KIB)] + \
           [Point("cosm", 264, 32 * KIB, CONTROL_LOAD_BYTES, repeats=3),
            Point("main", 16, 32 * KIB, CONTROL_LOAD_BYTES, load="tma", repeats=3)]


def late_plan() -> list[Point]:
    """Set C stores while set A's loads wait (K = 132; references with nothing stored first; a part of the
    old suite as a same-run control)."""
    K, L, L64 = 132, CONTROL_LOAD_BYTES, 64 * KIB

    def late(a, b_a, b_c, d, load_bytes=L, load="ld.v4"):
        return Point("late", K, b_a, load_bytes, storers=a, load=load, late_bytes=b_c, late_delay_us=d)

    pts = [Point("main", K, b, L) for b in (0, 16 * KIB, 32 * KIB)] + [Point("main", 66, b, L) for b in (0, 16 * KIB)]
    pts += [Point("bystander", K, 16 * KIB, L, storers=66)]
    pts += [late(a, 0, 0, 0.0) for a in (66, 33)] + [late(66, 16 * KIB, 0, 0.0), late(33, 32 * KIB, 0, 0.0)]
    pts += [late(66, 16 * KIB, b_c * KIB, d) for b_c in (16, 64) for d in (2.0, 5.0, 10.0)]
    pts += [late(66, 16 * KIB, 32 * KIB, 5.0), late(66, 32 * KIB, 64 * KIB, 5.0), late(66, 32 * KIB, 64 * KIB, 20.0)]
    pts += [late(33, 32 * KIB, b_c * KIB, 5.0) for b_c in (32, 64)]
    pts += [late(66, 0, 64 * KIB, 2.0)]   # A stores nothing: its loads run before C's bytes arrive
    pts += [late(66, 0, 0, 0.0, L64), late(66, 16 * KIB, 0, 0.0, L64), late(66, 16 * KIB, 64 * KIB, 5.0, L64)]
    pts += [late(66, 0, 0, 0.0, L64, "tma"), late(66, 16 * KIB, 0, 0.0, L64, "tma")]
    pts += [late(66, 16 * KIB, 64 * KIB, d, L64, "tma") for d in (2.0, 10.0)]
    pts += [Point("stream", K, 16 * KIB, L, storers=66, late_bytes=16 * KIB, late_delay_us=2.0, late_bursts=4,
                  late_spin_us=s) for s in (0.0, 10.0)]
    pts += [Point("stream", K, 16 * KIB, L, storers=66, late_bytes=8 * KIB, late_delay_us=2.0, late_bursts=8,
                  late_spin_us=5.0)]
    return pts


def late_fence(a: int, b_a_kib: int, b_c_kib: int, d_us: float) -> Point:
    """A fenced late point of the fence suites: K = 132, A = the first ``a`` CTAs storing ``b_a_kib``
    each, C the rest storing ``b_c_kib`` each ``d_us`` after the barrier, 256 KiB loads."""
    return Point("late-fence", 132, b_a_kib * KIB, CONTROL_LOAD_BYTES, storers=a, late_bytes=b_c_kib * KIB,
                 late_delay_us=d_us)


def fencelate_plan() -> list[Point]:
    """A (the first S of 132 CTAs) stores B, fences, loads 256 KiB; C (the rest) stores C per CTA D us
    after the grid barrier, while A's fences wait. C's total below the gate's ~330 kB (4 KiB x 66,
    2 KiB x 99) and above it; A below and past Q. Controls: A's loads alone (B = 0), A's fence alone
    (C = 0), the fence suite's K = 66 / 132 at 32 KiB, and one late point without a fence."""
    fl, K, L = late_fence, 132, CONTROL_LOAD_BYTES
    pts = [fl(66, 0, 0, 0.0), fl(33, 0, 0, 0.0), fl(66, 32, 0, 0.0), fl(66, 16, 0, 0.0), fl(66, 64, 0, 0.0),
           fl(33, 32, 0, 0.0)]
    pts += [fl(66, 32, c, 10.0) for c in (4, 16, 32)] + [fl(66, 16, c, 5.0) for c in (4, 32)]
    pts += [fl(66, 64, c, 10.0) for c in (4, 32)] + [fl(33, 32, c, 5.0) for c in (2, 16)]
    pts += [Point("fence", k, 32 * KIB, L) for k in (66, 132)]
    pts += [Point("late", K, 32 * KIB, L, storers=66, late_bytes=4 * KIB, late_delay_us=10.0)]
    return pts


def fencelate_heldout_plan() -> list[Point]:
    """Held out for the fence readings after ``fencelate``: C's bytes large against what A has left
    when they arrive (where a fence that waits for the link to empty and one that waits for the
    CTA's own bytes under equal shares part by 10-70 us), two fencelate points repeated, and the
    references of every A shape."""
    fl = late_fence
    pts = [fl(66, 0, 0, 0.0), fl(33, 0, 0, 0.0)] + [fl(a, b, 0, 0.0) for a, b in ((66, 8), (66, 16), (66, 32), (66, 64),
                                                                               (33, 32), (33, 64))]
    pts += [fl(66, 16, 64, 5.0), fl(66, 16, 64, 10.0), fl(66, 32, 64, 10.0), fl(66, 32, 32, 20.0), fl(66, 64, 64, 10.0),
            fl(33, 32, 32, 5.0), fl(33, 64, 16, 5.0), fl(66, 8, 32, 2.0)]
    pts += [fl(66, 16, 32, 5.0), fl(33, 32, 16, 5.0)]   # fencelate's two points where link missed, again
    return pts


def fencestream_plan() -> list[Point]:
    """A (16 or 33 of 132 CTAs) stores B, fences, loads; C (the rest) streams 4 KiB bursts per CTA P us
    apart from 2 us on, at about 2R, R and R/2 of the host link (116 x 4 KiB / 9 us = 52.8 GB/s), long
    enough to outlast A's fence under any reading; references without C."""
    K, L = 132, CONTROL_LOAD_BYTES

    def sf(a, b_a, spin, bursts=24):
        return Point("stream-fence", K, b_a * KIB, L, storers=a, late_bytes=4 * KIB, late_delay_us=2.0,
                     late_bursts=bursts, late_spin_us=spin)
    pts = [Point("late-fence", K, b * KIB, L, storers=a) for a, b in ((16, 0), (16, 32), (33, 0), (33, 32))]
    pts += [sf(16, 32, p) for p in (4.5, 9.0, 18.0)] + [sf(33, 32, p) for p in (9.0, 18.0)] + [sf(16, 8, 9.0)]
    return pts


TRICKLE_LOAD_BYTES = 2048 * KIB
TRICKLE_WINDOW_US = 240.0          # set C's stream spans at least this long (A's loads: ~80-160 us)
TRICKLE = ((4, (5.0, 10.0, 20.0)), (8, (10.0, 20.0, 40.0)), (16, (20.0, 40.0, 80.0)))   # KiB per burst, spins


def trickle_plan() -> list[Point]:
    """Set A (66 CTAs) stores nothing and streams 2 MiB each while set C (66 CTAs) trickles: bursts of
    b KiB per CTA, P us apart, at rates from ~R down to R/4, with per-burst volumes below and above
    the gate's ~330 kB. Does a load wait while the backlog is above the threshold whatever the arrival
    rate (then A slows by the share of time q > 330 kB), or only while the link is saturated? A base
    (C stores nothing) and a saturating stream (P = 0) bracket it."""
    K, A, L = 132, 66, TRICKLE_LOAD_BYTES

    def stream(b_kib, spin_us, bursts=None):
        bursts = bursts or max(2, int(round(TRICKLE_WINDOW_US / spin_us)))
        return Point("stream", K, 0, L, storers=A, late_bytes=b_kib * KIB, late_delay_us=2.0,
                     late_bursts=bursts, late_spin_us=spin_us)
    pts = [Point("late", K, 0, L, storers=A, late_bytes=0, late_delay_us=0.0)]
    pts += [stream(b, p) for b, spins in TRICKLE for p in spins]
    pts += [stream(16, 0.0, bursts=12), Point("late", K, 0, L, storers=A, late_bytes=0, late_delay_us=0.0)]
    return pts


SUITES = {"full": full_plan, "quick": quick_plan, "late": late_plan, "trickle": trickle_plan,
          "fencelate": fencelate_plan, "fencelate-heldout": fencelate_heldout_plan, "fencestream": fencestream_plan}
