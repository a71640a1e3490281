"""The attention kernel's program stagger: a number of microseconds, or the one the design test
asks for (``fa_bench --stagger-us design``).

The design is :func:`xsim.attention.stagger.design_stagger` on the calibrated profile of the
target (eq. 10 on the aligned output wave of the GPU's K programs; S* = K B_t / R when that wave
is above the knee a loading mainloop meets). xsim is imported here only for the design, and it
needs nothing beyond numpy (no SimPy, no plotting).
"""

from __future__ import annotations

import dataclasses

from . import fa_layout
from .fa_variants import KernelConfig

DESIGN_PROFILES = {"host": "h200-pcie-host", "peer": "h200-nvlink-x2"}


def stagger_number(value: str) -> float:
    """--stagger-us as microseconds ('design': 0 until K is known, :func:`design_config`)."""
    if value == "design":
        return 0.0
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"--stagger-us must be a number of microseconds or 'design', got {value!r}") from None


def design_platform(target: str, profile: str):
    """The calibrated platform the design reads: ``profile`` (a shipped name or a .json file),
    empty: DESIGN_PROFILES[target]; ValueError (one line) for an unknown one."""
    from xsim.platform import ProfileError, resolve_platform

    try:
        return resolve_platform(profile or DESIGN_PROFILES[target])
    except ProfileError as exc:
        raise ValueError(str(exc)) from None


def design_config(cfg: KernelConfig, target: str, profile: str, programs: int, block_m: int,
                  head_dim: int, sp: int) -> tuple[KernelConfig, dict]:
    """``cfg`` with the design's stagger for ``programs`` CTAs of ``block_m x head_dim`` bf16
    tiles to ``target`` on :func:`design_platform`, and the params the records carry about it."""
    from xsim.attention.shape import drain_peers
    from xsim.attention.stagger import design_stagger

    platform = design_platform(target, profile)
    d = design_stagger(platform, programs, fa_layout.tile_bytes(block_m, head_dim), peers=drain_peers(target, sp))
    return (dataclasses.replace(cfg, stagger_us=round(d.stagger_us, 1)),
            {"stagger_rule": f"design:{platform.name}", "stagger_knee": d.knee, "stagger_knee_bytes": d.knee_bytes})
