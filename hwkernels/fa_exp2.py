"""exp2 of the softmax partly on the FMA pipe (FA4-style emulation), partly on MUFU.

The shipped Q-loop's softmax is MUFU-bound: 66 MUFU.EX2 per thread per 128 x 128 KV step, at
16 results per clock per SM (~1050 cycles per step, serial with the two wgmmas; docs/fa-a2a.md).
fa_qloop._exp2(x, EMU) computes EMU of every 8 consecutive elements of a thread (one inline-asm
instance of `ptx(EMU)`, pack = 8, so no layout change) with a polynomial on the FMA/ALU pipes
and the rest with `ex2.approx.ftz.f32` (MUFU):

    x' = max(x, -127);  r = x' + 1.5 * 2^23 rounded down  (r's low mantissa bits hold floor(x'))
    f = x' - (r - 1.5 * 2^23)  in [0, 1);  p = 1 + f (c1 + f (c2 + f c3))   (2^f, minimax)
    2^x' = bits(p) + (bits(r) << 23)      (floor(x') added to p's exponent as an integer)

for x <= 0 (the softmax's x = s * scale - m). Relative error of the polynomial: 8.6e-5 (fp32
Horner), far below bf16 P's 3.9e-3. At x <= -127 the result is <= 2^-126 (treated as 0 in
bf16). `exp2_emulated_np` is the same arithmetic in numpy (tests); under the interpreter
(UPCAST) the kernel keeps tl.math.exp2 (inline asm does not run there). numpy only (no triton:
the tests import it in any order with the interpreter's). Measured (docs/fa-a2a.md, "exp2 on
the FMA pipe", "Run 3"): 1 of 8 is 2-5 % faster than all-MUFU FA-only at every swept M, more is
not; 1 of 8 is shipped (KernelConfig.emu = 1) since run 3 (cf3cabb).
"""

import numpy as np

# 2^f ~ 1 + f (C1 + f (C2 + f C3)) on [0, 1): fitted in float64 for the least maximum relative
# error with p(0) = 1 (tests/test_hwkernels_fa_exp2.py refits and checks), rounded to float32.
COEFFS = (0.6951163411140442, 0.22764700651168823, 0.07706519961357117)
_ROUND = 12582912.0                # 1.5 * 2^23


def _hex(x: float) -> str:
    return "0f%08X" % int(np.float32(x).view(np.uint32))


def ptx(emulated: int, pack: int = 8) -> str:
    """The inline PTX of one instance: outputs $0..$pack-1, inputs $pack..$2pack-1 (.b32
    registers of fp32 values); the first `emulated` elements by the polynomial."""
    c1, c2, c3 = (_hex(c) for c in COEFFS)
    lines = ["{", ".reg .b32 t0, t1, t2, t3;"]
    for i in range(pack):
        x, y = f"${pack + i}", f"${i}"
        if i < emulated:
            lines += [f"max.ftz.f32 t0, {x}, {_hex(-127.0)};",
                      f"add.rm.ftz.f32 t1, t0, {_hex(_ROUND)};",
                      f"sub.ftz.f32 t2, t1, {_hex(_ROUND)};",
                      "sub.ftz.f32 t2, t0, t2;",
                      f"fma.rn.ftz.f32 t3, t2, {c3}, {c2};",
                      f"fma.rn.ftz.f32 t3, t3, t2, {c1};",
                      f"fma.rn.ftz.f32 t3, t3, t2, {_hex(1.0)};",
                      "shl.b32 t1, t1, 23;",
                      f"add.s32 {y}, t1, t3;"]
        else:
            lines.append(f"ex2.approx.ftz.f32 {y}, {x};")
    return "\n\t".join(lines + ["}"])


def constraints(pack: int = 8) -> str:
    return ",".join(["=r"] * pack + ["r"] * pack)


def exp2_emulated_np(x) -> np.ndarray:
    """The emulated branch's arithmetic in numpy float32 (floor for the round-down add)."""
    x = np.maximum(np.asarray(x, dtype=np.float32), np.float32(-127.0))
    n = np.floor(x)
    f = (x - n).astype(np.float32)
    c1, c2, c3 = (np.float32(c) for c in COEFFS)
    p = (np.float32(1.0) + f * (c1 + f * (c2 + f * c3))).astype(np.float32)
    bits = p.view(np.int32) + (n.astype(np.int32) << 23)
    return bits.view(np.float32)


def fit_coeffs(deg: int = 3, points: int = 20001, rounds: int = 200) -> tuple:
    """(coefficients c1..c_deg, max relative error in float64) of 2^f ~ 1 + sum c_k f^k on
    [0, 1], by iteratively reweighted least squares on the relative error (Lawson)."""
    f = np.linspace(0.0, 1.0, points)
    y = 2.0 ** f
    a = np.stack([f ** k for k in range(1, deg + 1)], axis=1) / y[:, None]
    b = (y - 1.0) / y
    w = np.ones_like(f) / points
    c = None
    for _ in range(rounds):
        sw = np.sqrt(w)
        c = np.linalg.lstsq(a * sw[:, None], b * sw, rcond=None)[0]
        e = np.abs(a @ c - b)
        w = w * e / np.sum(w * e)
    return tuple(float(v) for v in c), float(np.max(np.abs(a @ c - b)))
