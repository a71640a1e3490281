"""hwkernels.fa_power's reading of nvidia-smi (CPU): the clock-event bitmask and the numbers."""

import math

from hwkernels.fa_power import _number, reasons


def test_reason_bits_are_named():
    assert reasons(0x4) == ["sw power cap"]
    assert reasons(0x1 | 0x20 | 0x80) == ["idle", "sw thermal", "hw power brake"]
    assert reasons(0) == []


def test_numbers_hex_masks_and_missing_values():
    assert _number(" 0x0000000000000004") == 4.0
    assert _number("1980") == 1980.0 and _number(" 512.33") == 512.33
    assert math.isnan(_number("[N/A]"))
