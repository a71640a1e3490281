"""The data pattern the burst-store kernels write, and its references (numpy and torch).

Word w (4 bytes) of producer p's burst j holds
    pattern_word(p, j, w) = (p * C_P) ^ (j * C_J) ^ (w * C_W)   (mod 2**32)
at byte offset (((j % ring) * K + p) * B + 4 * w) of the destination buffer (burst-major
layout; a ring of `ring` burst slots, see destination.py; ring = bursts: no slot is reused).
A slot reused by several bursts holds the last of them. Every word depends on (producer,
burst, offset), so a store that lands in the wrong place, a burst that was not written, or a
stale burst all show up as mismatches.
"""

import numpy as np

from .destination import last_burst_in_slot

C_P = 2654435761
C_J = 2246822519
C_W = 3266489917
MASK32 = 0xFFFFFFFF
POISON = 0xDEADBEEF


def pattern_words(producer: int, burst: int, words: int) -> np.ndarray:
    """Expected uint32 words of one (producer, burst) slot, shape [words]."""
    w = np.arange(words, dtype=np.uint64)
    base = ((producer * C_P) ^ (burst * C_J)) & MASK32
    return (((w * C_W) & MASK32) ^ base).astype(np.uint32)


def slot_byte_offset(producer: int, burst: int, producers: int, burst_bytes: int, ring: int | None = None) -> int:
    """Byte offset of producer p's burst j in the destination buffer (ring slots: j % ring)."""
    if not 0 <= producer < producers:
        raise ValueError('"producer" must be in [0, producers).')
    slot = burst if ring is None else burst % ring
    return (slot * producers + producer) * burst_bytes


def slot_bursts(bursts: int, ring: int | None) -> list[int]:
    """The burst each ring slot holds at the end, slot by slot (all bursts when ring is None)."""
    ring = bursts if ring is None else ring
    return [last_burst_in_slot(s, ring, bursts) for s in range(min(ring, bursts))]


def region_bytes(producers: int, burst_bytes: int, bursts: int, ring: int | None = None) -> int:
    """Bytes of the destination a run writes."""
    return len(slot_bursts(bursts, ring)) * producers * burst_bytes


def expected_buffer(producers: int, burst_bytes: int, bursts: int, ring: int | None = None) -> np.ndarray:
    """The whole destination region as uint32, shape [slots, producers, burst_bytes // 4]."""
    if burst_bytes % 16:
        raise ValueError('"burst_bytes" must be a multiple of 16.')
    words = burst_bytes // 4
    held = slot_bursts(bursts, ring)
    j = np.asarray(held, dtype=np.uint64).reshape(len(held), 1, 1)
    p = np.arange(producers, dtype=np.uint64).reshape(1, producers, 1)
    w = np.arange(words, dtype=np.uint64).reshape(1, 1, words)
    v = ((p * C_P) & MASK32) ^ ((j * C_J) & MASK32) ^ ((w * C_W) & MASK32)
    return v.astype(np.uint32)


def torch_expected_burst(burst: int, producers: int, burst_bytes: int, device):
    """Expected words of burst j for all producers as int64 in [0, 2**32), shape [K, B/4]."""
    import torch

    words = burst_bytes // 4
    p = torch.arange(producers, dtype=torch.int64, device=device).view(producers, 1)
    w = torch.arange(words, dtype=torch.int64, device=device).view(1, words)
    base = ((p * C_P) & MASK32) ^ ((burst * C_J) & MASK32)
    return base ^ ((w * C_W) & MASK32)


def torch_check(buf_u8, producers: int, burst_bytes: int, bursts: int, ring: int | None = None) -> tuple[bool, float]:
    """Compare a destination buffer (uint8 torch tensor) with the pattern, slot by slot.

    Returns (ok, max_abs_err) where max_abs_err is the largest |got - expected| over all
    words, both read as unsigned 32-bit integers.
    """
    words = burst_bytes // 4
    held = slot_bursts(bursts, ring)
    region = buf_u8[: len(held) * producers * burst_bytes].view(-1).view(dtype=_int32())
    region = region.view(len(held), producers, words)
    worst = 0
    for slot, j in enumerate(held):
        got = region[slot].to(dtype=_int64()) & MASK32
        exp = torch_expected_burst(j, producers, burst_bytes, buf_u8.device)
        worst = max(worst, int((got - exp).abs().max().item()))
    return worst == 0, float(worst)


def torch_poison(buf_u8, nbytes: int) -> None:
    """Fill the first nbytes of a uint8 torch buffer with the POISON word."""
    poison_i32 = POISON - (1 << 32)
    buf_u8[:nbytes].view(dtype=_int32()).fill_(poison_i32)


def _int32():
    import torch

    return torch.int32


def _int64():
    import torch

    return torch.int64
