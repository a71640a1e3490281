import numpy as np
import pytest

from hwkernels import pattern


def test_numpy_reference_matches_per_slot_words():
    buf = pattern.expected_buffer(producers=3, burst_bytes=64, bursts=4)
    assert buf.shape == (4, 3, 16) and buf.dtype == np.uint32
    for j in range(4):
        for p in range(3):
            assert np.array_equal(buf[j, p], pattern.pattern_words(p, j, 16))


def test_words_differ_across_producer_burst_and_offset():
    a = pattern.pattern_words(0, 0, 1024)
    assert len(set(a.tolist())) == 1024
    assert not np.array_equal(a, pattern.pattern_words(1, 0, 1024))
    assert not np.array_equal(a, pattern.pattern_words(0, 1, 1024))


def test_known_word_values():
    # (p*C_P) ^ (j*C_J) ^ (w*C_W) mod 2**32, written out for p=1, j=2, w=3
    expect = ((1 * 2654435761) ^ ((2 * 2246822519) % 2**32) ^ ((3 * 3266489917) % 2**32))
    assert pattern.pattern_words(1, 2, 4)[3] == expect % 2**32


def test_slot_offsets_are_burst_major():
    assert pattern.slot_byte_offset(0, 0, 132, 32768) == 0
    assert pattern.slot_byte_offset(5, 0, 132, 32768) == 5 * 32768
    assert pattern.slot_byte_offset(0, 1, 132, 32768) == 132 * 32768
    with pytest.raises(ValueError):
        pattern.slot_byte_offset(132, 0, 132, 32768)


def test_torch_reference_and_check_agree_with_numpy():
    torch = pytest.importorskip("torch")
    k, b, n = 3, 64, 5
    ref = pattern.expected_buffer(k, b, n)
    for j in range(n):
        t = pattern.torch_expected_burst(j, k, b, "cpu").numpy()
        assert np.array_equal(t.astype(np.uint32), ref[j])
    buf = torch.from_numpy(ref.view(np.int32).ravel().copy()).view(torch.uint8)
    assert pattern.torch_check(buf, k, b, n) == (True, 0.0)


def test_torch_check_catches_poison_and_misplaced_words():
    torch = pytest.importorskip("torch")
    k, b, n = 2, 32, 3
    good = pattern.expected_buffer(k, b, n).view(np.int32).ravel().copy()
    buf = torch.from_numpy(good).view(torch.uint8)
    pattern.torch_poison(buf, buf.numel())
    ok, err = pattern.torch_check(buf, k, b, n)
    assert not ok and err > 0
    swapped = pattern.expected_buffer(k, b, n)
    swapped[1, 0], swapped[1, 1] = swapped[1, 1].copy(), swapped[1, 0].copy()
    buf = torch.from_numpy(swapped.view(np.int32).ravel().copy()).view(torch.uint8)
    assert pattern.torch_check(buf, k, b, n)[0] is False


def test_ring_slots_hold_the_last_burst_written():
    from hwkernels.destination import last_burst_in_slot, ring_bursts, ring_slot

    # 10 bursts over a ring of 4: slots hold bursts 8, 9, 6, 7
    assert [ring_slot(j, 4) for j in range(10)] == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    assert pattern.slot_bursts(10, 4) == [8, 9, 6, 7]
    assert pattern.slot_bursts(3, 8) == [0, 1, 2]
    assert all(last_burst_in_slot(s, 4, 10) == max(j for j in range(10) if j % 4 == s) for s in range(4))
    assert ring_bursts(132 * 32 * 1024, 64) == 59          # ceil(4 * 60 MiB / 4.125 MiB)
    assert ring_bursts(1 << 30, 64) == 1 and ring_bursts(1024, 64) == 64
    exp = pattern.expected_buffer(3, 64, 10, ring=4)
    assert exp.shape == (4, 3, 16)
    assert np.array_equal(exp[1], pattern.expected_buffer(3, 64, 10)[9])
    assert pattern.slot_byte_offset(2, 9, 3, 64, ring=4) == (1 * 3 + 2) * 64


def test_torch_check_with_a_ring():
    torch = pytest.importorskip("torch")
    k, b, n, ring = 3, 64, 10, 4
    exp = pattern.expected_buffer(k, b, n, ring)
    buf = torch.from_numpy(exp.view(np.uint8).reshape(-1).copy())
    assert pattern.torch_check(buf, k, b, n, ring) == (True, 0.0)
    wrong = torch.from_numpy(pattern.expected_buffer(k, b, n)[:ring].view(np.uint8).reshape(-1).copy())
    assert pattern.torch_check(wrong, k, b, n, ring)[0] is False   # bursts 0..3 are stale in a ring of 4
