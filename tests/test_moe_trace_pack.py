"""xsim.moe.trace_pack: the traces files packed losslessly, unpacked by every reader, and its command's errors."""

import numpy as np
import pytest

from xsim.moe import trace_pack
from xsim.moe.traces import merged

RNG = np.random.default_rng(7)


def _stamps(n: int, step: int) -> np.ndarray:
    """[n, 6] int32 stamps of one program's tiles in order, each a multiple of ``step`` ns."""
    return (np.cumsum(RNG.integers(0, 3000, size=n * 6)) * step).reshape(n, 6).astype(np.int32)


def _traces(step: int = 32) -> dict:
    tiles = np.stack([RNG.integers(0, 2, 40), RNG.integers(0, 64, 40), RNG.integers(0, 300, 40),
                      RNG.integers(0, 16, 40)], axis=1).astype(np.int32)
    return {"c|wave|host|stamps": _stamps(40, step), "c|wave|local|stamps": _stamps(40, step),
            "c|wave|tiles": tiles, "c|wave|offsets": np.array([0, 20, 40], np.int64),
            "c|wave|store_bytes": RNG.integers(0, 1 << 16, 40)}


@pytest.mark.parametrize("step", [1, 32, 1000])
def test_packing_gives_every_array_back_exactly(step):
    arrays = _traces(step)
    packed = trace_pack.packed(arrays)
    assert "c|wave|host|stamps" not in packed and int(packed["c|wave|host|stamps_unit"]) % step == 0
    assert packed["c|wave|tiles_packed"].dtype == np.int16 and packed["c|wave|offsets"] is arrays["c|wave|offsets"]
    back = trace_pack.unpacked(packed)
    assert back.keys() == arrays.keys()
    assert all(back[k].dtype == arrays[k].dtype and np.array_equal(back[k], arrays[k]) for k in arrays)


def test_tiles_that_do_not_fit_16_bits_stay_as_they_are():
    arrays = _traces() | {"c|wave|tiles": np.array([[0, 1, 40000, 2]], np.int32)}
    packed = trace_pack.packed(arrays)
    assert "c|wave|tiles" in packed and "c|wave|tiles_packed" not in packed


def test_readers_unpack_and_take_packed_and_raw_files_together(tmp_path):
    arrays = _traces()
    raw, small = tmp_path / "raw.npz", tmp_path / "packed.npz"
    np.savez_compressed(raw, commit=np.array("abc"), **{k: v for k, v in arrays.items() if "|local|" not in k})
    assert trace_pack.main([str(raw), str(small)]) == 0
    np.savez(tmp_path / "local.npz", **{k: v for k, v in arrays.items() if "|local|" in k})
    got = merged([np.load(small), np.load(tmp_path / "local.npz")])
    assert got.keys() == arrays.keys() and all(np.array_equal(got[k], arrays[k]) for k in arrays)
    assert str(np.load(small)["commit"]) == "abc"


def test_the_command_never_writes_over_its_input_and_says_why_in_one_line(tmp_path, capsys):
    path = tmp_path / "t.npz"
    np.savez(path, **_traces())
    before = path.read_bytes()
    assert trace_pack.main([str(path), str(path)]) == 2
    assert path.read_bytes() == before
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    assert trace_pack.main([str(tmp_path / "junk.npz"), str(tmp_path / "o.npz")]) == 2
    assert trace_pack.main([str(tmp_path / "missing.npz"), str(tmp_path / "o.npz")]) == 2
    assert trace_pack.main([str(path), str(tmp_path / "p.npz")]) == 0
    assert trace_pack.main([str(tmp_path / "p.npz"), str(tmp_path / "q.npz")]) == 2   # packed already
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and all(line.startswith("trace_pack: ") for line in err)
    assert "packed already" in err[-1] and not (tmp_path / "o.npz").exists()
