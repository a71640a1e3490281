"""Per-tile mainloop times: measured records where they exist, else a roofline.

A Linear-1 tile is a ``block_m x (2 * block_n1) x hidden`` GEMM (gate and up), a Linear-2 tile
``block_m x block_n2 x intermediate``. :class:`MainloopModel` gives a tile kind's mainloop time
from, first to last: the mean of the records of the very layer (``pool = "layer"``), of the very
shape, the fit ``t = fixed_us + per_k_us * k_dim`` over the records of its (precision, block_m,
block_n, kind), else the roofline. Which records, and how they are fitted:
:mod:`xsim.moe.compute_fit`; :func:`mainloop_model` reads them and builds the model.
The same records' per-tile costs outside the mainloop are the kernel's fixed per-tile costs
(:meth:`MainloopModel.overhead_us`): ``gap_us`` (the bookkeeping between a program's tiles) and
``wait_us`` with no dependency pending before the mainloop; ``epilogue_us`` after it (both
kinds), and for L1 its ``store_us`` and ``signal_us``. The fused-local records' ``kernel_outside_us``
(launch, prologue and exit: the kernel's CUDA-event time minus its first-to-last stamp) is
the per-kernel fixed cost (:attr:`MainloopModel.kernel_outside_us`). Their p10 and p90 give each
kind's spread from tile to tile (:meth:`MainloopModel.spread`, :mod:`xsim.spread`).

Without a record for that key the roofline is used:
``t = max(flops / peak_per_sm, bytes / hbm_per_sm) + fixed_us``, an ideal-cache roofline: a
tile's weight bytes are shared by the m-blocks of its expert (``weight_reuse``) and its
activation rows by the n-blocks of its m-block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xsim.moe.compute_fit import (fit_kernel_outside_us, fit_layers, fit_overheads, fit_records, fit_shapes,
                                  fit_spreads)
from xsim.moe.shapes import MoEShape

# Dense peaks per GPU (TFLOP/s by precision, HBM TB/s) the roofline uses, by platform name.
ROOFLINE_PEAKS = {
    # NVIDIA H200 SXM datasheet, dense (no sparsity): 989 TFLOP/s bf16 is the boost figure; the
    # brief fixes 790 bf16 / 1580 fp8 (sustained) and 4.3 TB/s of the 4.8 TB/s HBM3e.
    "h200": {"bf16": 790.0, "fp8": 1580.0, "hbm_tbps": 4.3},
    # NVIDIA H100 SXM (80 GB HBM3): the H200's SMs and clocks (the same matrix rate measured on the
    # lent machines, 798 against 788 TFLOP/s bf16), the device-to-device copy measured there, 3.0 TB/s.
    "h100": {"bf16": 790.0, "fp8": 1580.0, "hbm_tbps": 3.0},
    # The paper's 148-SM GPU (Sec. 5.1), assumed B200-class: 2.25 PFLOP/s bf16, 4.5 PFLOP/s fp8
    # dense, 8 TB/s HBM3e (NVIDIA B200 datasheet). An assumption, not a measurement.
    "b200": {"bf16": 2250.0, "fp8": 4500.0, "hbm_tbps": 8.0},
}


@dataclass(frozen=True)
class MainloopModel:
    """Mainloop time per tile kind for a shape; ``source`` says where each came from."""

    peaks: dict
    sms: int
    fits: dict = field(default_factory=dict)   # (precision, block_m, block_n, kind) -> compute_fit.LinearFit
    fixed_us: float = 0.0                       # roofline's per-tile fixed cost
    records_file: str = ""
    overheads: dict = field(default_factory=dict)  # same key -> {name in compute_fit.OVERHEADS: us}
    kernel_outside_us: float = 0.0              # per kernel: launch, prologue, exit
    shapes: dict = field(default_factory=dict)  # key + (hidden, intermediate) -> mean mainloop us
    spreads: dict = field(default_factory=dict) # the same shape keys, and the fit's keys -> CV
    records: list = field(default_factory=list, repr=False, compare=False)  # the parsed records used
    layers: dict = field(default_factory=dict)  # shape key + LAYER_KEYS -> mean mainloop us (pool "layer")
    layer_spreads: dict = field(default_factory=dict)  # the same keys -> CV
    by_schedule: dict = field(default_factory=dict)  # layer key + (schedule,) -> (mean us, CV)

    def overhead_us(self, shape: MoEShape, kind: str, name: str) -> float:
        """A measured per-tile cost outside the mainloop (0 without records): ``wait_us`` (before
        the mainloop, no dependency pending), ``store_us`` and ``signal_us`` (an L1 epilogue)."""
        return self.overheads.get(self._key(shape, kind), {}).get(name, 0.0)

    def l1_epilogue_us(self, shape: MoEShape) -> float:
        """An L1 tile's epilogue (SwiGLU and cast), its local activation store and its l2_full
        release, as measured."""
        return sum(self.overhead_us(shape, "l1", name) for name in ("epilogue_us", "store_us", "signal_us"))

    def l2_epilogue_us(self, shape: MoEShape) -> float:
        """An L2 tile's epilogue before its first Combine store (weighting and cast), as measured."""
        return self.overhead_us(shape, "l2", "epilogue_us")

    def before_mainloop_us(self, shape: MoEShape, kind: str) -> float:
        """A tile's fixed costs before its mainloop, as measured: the bookkeeping since the
        previous tile of the program ended (``gap_us``) and the wait with nothing pending."""
        return self.overhead_us(shape, kind, "gap_us") + self.overhead_us(shape, kind, "wait_us")

    def l1_us(self, shape: MoEShape, weight_reuse: float = 1.0) -> float:
        return self._tile_us(shape, "l1", weight_reuse)

    def l2_us(self, shape: MoEShape, weight_reuse: float = 1.0) -> float:
        return self._tile_us(shape, "l2", weight_reuse)

    def source(self, shape: MoEShape) -> dict:
        """For each tile kind of this shape: "layer" (records of this very layer), "shape" (of this
        very shape), "records" (the fit over k of records of other shapes) or "roofline"."""
        def one(kind):
            if self._layer_key(shape, kind) in self.layers:
                return "layer"
            if self._shape_key(shape, kind) in self.shapes:
                return "shape"
            return "records" if self._key(shape, kind) in self.fits else "roofline"
        return {kind: one(kind) for kind in ("l1", "l2")}

    def spread(self, shape: MoEShape, kind: str) -> float:
        """The tile kind's measured coefficient of variation of the mainloop (records of this very
        layer, else shape, else of every shape with its key; 0 without records)."""
        if self._layer_key(shape, kind) in self.layer_spreads:
            return self.layer_spreads[self._layer_key(shape, kind)]
        return self.spreads.get(self._shape_key(shape, kind), self.spreads.get(self._key(shape, kind), 0.0))

    def schedule_mainloop(self, shape: MoEShape, kind: str, schedule: str) -> tuple[float, float] | None:
        """(mean mainloop us, CV) of this layer's records of this very schedule (None without one;
        the builder uses them with ``mainloop_pool = schedule`` or ``contention_anchor = schedule``)."""
        return self.by_schedule.get(self._layer_key(shape, kind) + (schedule,))

    def _layer_key(self, shape: MoEShape, kind: str) -> tuple:
        return self._shape_key(shape, kind) + (shape.experts, shape.topk, shape.tokens, shape.ep)

    def _shape_key(self, shape: MoEShape, kind: str) -> tuple:
        return self._key(shape, kind) + (shape.hidden, shape.intermediate)

    def _key(self, shape: MoEShape, kind: str) -> tuple:
        block_n = shape.block_n1 if kind == "l1" else shape.block_n2
        return (shape.precision, shape.block_m, block_n, kind)

    def _tile_us(self, shape: MoEShape, kind: str, weight_reuse: float) -> float:
        if self._layer_key(shape, kind) in self.layers:
            return self.layers[self._layer_key(shape, kind)]
        if self._shape_key(shape, kind) in self.shapes:
            return self.shapes[self._shape_key(shape, kind)]
        fit = self.fits.get(self._key(shape, kind))
        k_dim = shape.hidden if kind == "l1" else shape.intermediate
        if fit is not None:
            return max(fit.at(k_dim), 0.0)
        return roofline_tile_us(shape, kind, self.peaks, self.sms, weight_reuse) + self.fixed_us


def roofline_tile_us(shape: MoEShape, kind: str, peaks: dict, sms: int, weight_reuse: float = 1.0) -> float:
    """Compute- or bandwidth-bound time of one tile on one SM (its 1/sms share of the GPU).

    Args: shape; kind "l1" | "l2"; peaks {"bf16"|"fp8": TFLOP/s, "hbm_tbps"}; sms; weight_reuse
    (m-blocks that share the tile's weights, >= 1). Returns microseconds.
    """
    n = 2 * shape.block_n1 if kind == "l1" else shape.block_n2
    k = shape.hidden if kind == "l1" else shape.intermediate
    flops = 2.0 * shape.block_m * n * k
    act_reuse = shape.l1_nblocks if kind == "l1" else shape.l2_nblocks   # tiles reading one A tile
    nbytes = (shape.block_m * k / act_reuse + k * n / max(weight_reuse, 1.0)) * shape.element_bytes
    flop_us = flops / (peaks[shape.precision] * 1e6 / sms)     # TFLOP/s -> FLOP/us per SM
    byte_us = nbytes / (peaks["hbm_tbps"] * 1e6 / sms)          # TB/s -> bytes/us per SM
    return max(flop_us, byte_us)


def gpu_of(platform_name: str) -> str:
    """The GPU a platform runs on, the key of :data:`ROOFLINE_PEAKS` and the selector's L2 sizes:
    ``paper-*`` is the paper's (B200-class) GPU, ``h100-*`` an H100, every other an H200."""
    if platform_name.startswith("paper"):
        return "b200"
    return "h100" if platform_name.startswith("h100") else "h200"


def peaks_for(platform_name: str) -> dict:
    return ROOFLINE_PEAKS[gpu_of(platform_name)]


POOLS = ("layer", "shape", "schedule")


def read_records(path: str | Path) -> list[dict]:
    """The JSON objects of a records file (bounded, UTF-8, finite numbers: xsim.fileio)."""
    from xsim.fileio import parse_json, read_text

    out = []
    for number, line in enumerate(read_text(path, "moe records", ValueError).splitlines(), start=1):
        if line.strip():
            record = parse_json(line)
            if not isinstance(record, dict):
                raise ValueError(f"moe records {path}:{number}: a record must be a JSON object")
            out.append(record)
    return out


def shipped_records_path(platform_name: str) -> Path:
    return Path(__file__).resolve().parents[2] / "calibration" / "records" / f"{platform_name}-moe.jsonl"


def mainloop_model(platform_name: str, sms: int, records_path: str = "", use_records: bool = True,
                   fixed_us: float = 0.0, records: list[dict] | None = None, pool: str = "layer") -> MainloopModel:
    """The compute model for a platform: the given records (parsed), else its shipped (or given)
    moe records file, else the roofline. ``pool``: "layer" (records of the very layer first, then
    of the very shape), "shape" (the very shape only, every layer of it pooled) or "schedule" (as
    layer, and each schedule's own mean and spread, :meth:`MainloopModel.schedule_mainloop`, replace
    them in the builder: a measured input, not a prediction of the schedules' difference; the
    per-schedule means are there with every pool, for ``contention_anchor = schedule``)."""
    if pool not in POOLS:
        raise ValueError(f'"pool" must be one of {", ".join(POOLS)}, got {pool!r}')
    source = ""
    if use_records and records is None:
        path = Path(records_path) if records_path else shipped_records_path(platform_name)
        if path.exists():
            records, source = read_records(path), path.name
    elif use_records:
        source = "records given"
    records = records if use_records and records is not None else []
    try:
        fits, overheads, outside = fit_records(records), fit_overheads(records), fit_kernel_outside_us(records)
        shapes, spreads = fit_shapes(records), fit_spreads(records)
        layers, layer_spreads = fit_layers(records) if pool != "shape" else ({}, {})
        means, cvs = fit_layers(records, ("schedule",))
        by_schedule = {k: (v, cvs.get(k, 0.0)) for k, v in means.items()}
    except (KeyError, TypeError, AttributeError) as exc:  # a record of another shape: one line upstream
        raise ValueError(f"moe records {source or 'given'}: a mainloop record lacks or mistypes {exc}") from None
    return MainloopModel(peaks=peaks_for(platform_name), sms=sms, fits=fits, fixed_us=fixed_us,
                         records_file=source if fits else "", overheads=overheads, kernel_outside_us=outside,
                         shapes=shapes, spreads=spreads, records=records, layers=layers,
                         layer_spreads=layer_spreads, by_schedule=by_schedule)
