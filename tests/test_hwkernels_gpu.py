"""GPU-only checks of the burst-store kernels (skipped without CUDA and CuPy)."""

import pytest

pytestmark = pytest.mark.gpu


def _cuda():
    torch = pytest.importorskip("torch")
    pytest.importorskip("cupy")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


@pytest.mark.parametrize("mechanism", ["st.v4", "st.v2", "st.b32", "tma"])
@pytest.mark.parametrize("aligned", [True, False])
def test_local_bursts_are_correct_and_timed(mechanism, aligned):
    torch = _cuda()
    from hwkernels import burst_store, timing

    k, b, n = 8, 4096, 6
    bs = burst_store.BurstStore(torch.cuda.current_device())
    buf = torch.empty(k * b * n, dtype=torch.uint8, device="cuda")
    burst_store.poison(buf, k, b, n)
    run = bs.run(buf.data_ptr(), k, b, n, 2000, aligned, mechanism, 128)
    assert not run.barrier_timeout
    assert burst_store.check(buf, k, b, n) == (True, 0.0)
    t = timing.burst_times(run.stamps, run.info)
    assert timing.distinct_sms(t)
    assert (t.issue_us > 0).all() and (t.clock_ghz > 0.5).all()
    assert (timing.period_samples(t, 1) >= 0.9).all()      # 2000-cycle gap ~ 1 us
