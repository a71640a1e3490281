"""hwkernels.segment_rate: the two store patterns cover the same segments exactly once, the host
reference matches, and the kernel writes them (Triton's interpreter, tiny launch)."""

import numpy as np
import pytest

from hwkernels import segment_rate as sr


def test_layout_and_bad_row_bytes():
    assert sr.layout(4, 8, 1024) == (32, 8)          # 4 segments per row
    with pytest.raises(ValueError, match="row_bytes"):
        sr.layout(4, 8, 1000)
    with pytest.raises(ValueError, match="row_bytes"):
        sr.layout(3, 1, 1024)                        # 3 segments do not fill rows of 4


@pytest.mark.parametrize("pattern", ["contiguous", "rows"])
def test_reference_covers_every_segment_once(pattern):
    segments, rows = sr.layout(4, 8, 1024)
    ref = sr.expected(segments, rows, pattern).reshape(segments, sr.LANES)
    first = (ref[:, 0].astype(np.int64) * pow(131, -1, 0x8000)) & 0x7FFF   # lane 0 holds g * 131
    assert sorted(first) == list(range(segments))
    if pattern == "rows":   # consecutive segments of one program sit one row apart
        g = np.arange(segments)
        assert np.array_equal(first.reshape(rows, -1)[g % rows, g // rows], g)


@pytest.mark.parametrize("pattern", ["contiguous", "rows"])
def test_kernel_writes_the_reference_under_the_interpreter(monkeypatch, pattern):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    programs, per_program = 2, 32
    segments, rows = sr.layout(programs, per_program, 4 * sr.SEGMENT_BYTES)
    dst = torch.full((segments * sr.LANES,), -1, dtype=torch.int16)
    sr.launch(dst, programs, per_program, rows, pattern)
    assert torch.equal(dst, torch.from_numpy(sr.expected(segments, rows, pattern)))
