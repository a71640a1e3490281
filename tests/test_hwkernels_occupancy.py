"""The persistent kernel's co-residency rule (pure; the driver's calculator needs a GPU)."""

import pytest

from hwkernels.moe import KernelConfig
from hwkernels.occupancy import check_coresident


def test_streams_up_to_sms_times_ctas_per_sm_fit():
    check_coresident(132, 132, 1)
    check_coresident(264, 132, 2)


def test_one_stream_too_many_raises():
    with pytest.raises(ValueError, match="264 for co-residency, got 265"):
        check_coresident(265, 132, 2)
    with pytest.raises(ValueError, match="132 for co-residency, got 133"):
        check_coresident(133, 132, 1)


def test_a_cta_that_does_not_fit_raises():
    with pytest.raises(ValueError, match="one CTA per SM does not fit"):
        check_coresident(1, 132, 0)


def test_combine_hint_is_checked():
    assert KernelConfig(combine_hint="cs").combine_hint == "cs"
    with pytest.raises(ValueError, match="combine_hint"):
        KernelConfig(combine_hint="wt")


def test_maxnreg_is_checked():
    assert KernelConfig(maxnreg=128).maxnreg == 128
    with pytest.raises(ValueError, match="maxnreg"):
        KernelConfig(maxnreg=300)
