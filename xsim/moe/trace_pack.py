"""Lossless packing of the MoE kernels' traces files (``hwkernels.moe_bench --traces``, ``hwkernels.moe_beside
--traces``), so that a whole catalog's stamps fit in the tree a device call carries.

A traced run's ``|stamps`` (int32 ns from the kernel's first tile, [n, 6]) are %globaltimer readings: multiples of
the timer's step (32 ns on the H100), and each one a little after the one before it in the table's row order.
Packed, they are ``|stamps_packed``, the first differences of the rows laid end to end in units of that step, stored
column by column ([6, n] int32), and ``|stamps_unit``, the step. A table's ``|tiles`` ([n, 4] int32: kind, expert,
m-block, n-block) become ``|tiles_packed`` ([4, n] int16) where every value fits. Under the npz's deflate that is
about 2.7 times smaller. :func:`unpacked` gives the very arrays back (dtype and shape included); :func:`packed`
checks that before it returns, and every reader (:func:`xsim.moe.traces.merged`) unpacks.

    python -m xsim.moe.trace_pack IN.npz OUT.npz        (never over IN; one line and exit 2 on bad input)
"""

from __future__ import annotations

import argparse
import io
import sys

import numpy as np

from xsim.fileio import OutputError, atomic_path, read_bytes

STAMPS, TILES = "|stamps", "|tiles"
PACKED, UNIT = "_packed", "_unit"
INT16 = np.iinfo(np.int16)


def _pack_stamps(stamps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    flat = stamps.astype(np.int64).ravel()
    unit = int(np.gcd.reduce(flat)) if flat.size and flat.any() else 1
    steps = np.diff(flat // unit, prepend=0)
    if steps.size and (steps.min() < np.iinfo(np.int32).min or steps.max() > np.iinfo(np.int32).max):
        raise ValueError("a stamp step does not fit 32 bits")
    return steps.astype(np.int32).reshape(stamps.shape).T.copy(), np.array(unit, dtype=np.int64)


def packed(arrays: dict) -> dict:
    """Every ``|stamps`` and ``|tiles`` array of ``arrays`` packed, the rest as it is; ValueError if the packing
    would not give them back exactly."""
    out = {}
    for key, a in arrays.items():
        if key.endswith(STAMPS) and a.ndim == 2 and np.issubdtype(a.dtype, np.integer):
            out[key + PACKED], out[key + UNIT] = _pack_stamps(a)
        elif key.endswith(TILES) and a.ndim == 2 and a.size and INT16.min <= a.min() and a.max() <= INT16.max:
            out[key + PACKED] = a.astype(np.int16).T.copy()
        else:
            out[key] = a
    back = unpacked(out)
    for key, a in arrays.items():
        if key not in back or back[key].dtype != a.dtype or not np.array_equal(back[key], a):
            raise ValueError(f"{key}: packing would not give it back")
    return out


def unpacked(arrays: dict, dtype=np.int32) -> dict:
    """The arrays as the kernels wrote them (packed ones unpacked to ``dtype``, the traces' int32)."""
    out = {}
    for key, a in arrays.items():
        if key.endswith(STAMPS + UNIT):
            continue
        if key.endswith(STAMPS + PACKED):
            base = key[:-len(PACKED)]
            unit = int(arrays[base + UNIT])
            out[base] = (np.cumsum(a.T.astype(np.int64).ravel()) * unit).reshape(a.T.shape).astype(dtype)
        elif key.endswith(TILES + PACKED):
            out[key[:-len(PACKED)]] = a.T.astype(dtype)
        else:
            out[key] = a
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m xsim.moe.trace_pack", description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    args = ap.parse_args(argv)
    try:
        raw = read_bytes(args.input, "traces file", ValueError, limit=1 << 30)
        try:
            with np.load(io.BytesIO(raw), allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        except (OSError, ValueError) as exc:
            raise ValueError(f"{args.input} is not an npz file ({exc})") from None
        if not any(k.endswith(STAMPS) for k in arrays):
            raise ValueError(f"{args.input} holds no |stamps array to pack (packed already?)")
        out = packed(arrays)
        with atomic_path(args.output) as tmp, open(tmp, "wb") as fh:
            np.savez_compressed(fh, **out)
    except (OutputError, ValueError) as exc:
        print(f"trace_pack: {exc}", file=sys.stderr)
        return 2
    print(f"trace_pack: {args.input} ({len(raw)} bytes) -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
