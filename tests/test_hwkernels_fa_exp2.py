"""The softmax's partly emulated exp2 (hwkernels/fa_exp2.py): the polynomial and its bit-level
arithmetic in numpy against exp2, the coefficients refitted, the PTX of every EMU choice."""

import numpy as np
import pytest

from hwkernels import fa_exp2


def test_refit_gives_the_shipped_coefficients_and_error():
    coeffs, err = fa_exp2.fit_coeffs()
    assert np.allclose(coeffs, fa_exp2.COEFFS, rtol=1e-6)
    assert 5e-5 < err < 1e-4            # degree 3: ~8.6e-5, far below bf16's 3.9e-3


def test_emulated_exp2_matches_exp2_over_the_softmax_range():
    x = np.concatenate([np.linspace(-126.0, 0.0, 400001), -np.logspace(-8, 2, 1001),
                        [0.0, -1.0, -0.5, -126.0]]).astype(np.float32)
    got = fa_exp2.exp2_emulated_np(x).astype(np.float64)
    want = np.exp2(x.astype(np.float64))
    assert np.max(np.abs(got / want - 1.0)) < 1e-4
    assert np.all(np.diff(got[:400001]) >= 0)      # monotone over the grid (floor steps too)


def test_emulated_exp2_underflows_to_tiny_non_negative_values():
    x = np.array([-127.0, -150.0, -1e30, -np.inf], dtype=np.float32)
    got = fa_exp2.exp2_emulated_np(x)
    assert np.all(got >= 0) and np.all(got <= 2.0 ** -126)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_ptx_sends_k_of_8_elements_to_the_polynomial(k):
    asm = fa_exp2.ptx(k)
    assert asm.count("ex2.approx.ftz.f32") == 8 - k
    assert asm.count("fma.rn.ftz.f32") == 3 * k and asm.count("add.rm.ftz.f32") == k
    outs = [f"${i}," for i in range(8)]
    assert all(o in asm for o in outs)                  # every output written once
    assert fa_exp2.constraints().split(",") == ["=r"] * 8 + ["r"] * 8
    for c in fa_exp2.COEFFS:                            # the coefficients as PTX hex floats
        assert fa_exp2._hex(c) in asm


def test_hex_float_round_trips():
    for v in (1.0, -127.0, 12582912.0, fa_exp2.COEFFS[0]):
        bits = int(fa_exp2._hex(v)[2:], 16)
        assert np.array([bits], dtype=np.uint32).view(np.float32)[0] == np.float32(v)
