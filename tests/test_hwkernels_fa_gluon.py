"""The Gluon attention forward (hwkernels.fa_gluon): compiled for sm_90 on the CPU (registers,
spills, the softmax under P V in the SASS), and on a GPU (marked gpu) against torch SDPA."""

import pytest

from hwkernels import fa_gluon


@pytest.fixture(scope="module")
def sass():
    pytest.importorskip("triton.experimental.gluon")
    try:
        return {ov: fa_gluon.inspect(fa_gluon.compile_offline(stages=3, overlap=ov))
                for ov in (0, 2)}
    except Exception as exc:  # noqa: BLE001 - no ptxas / no CUDA backend here
        pytest.skip(f"cannot compile Gluon for sm_90 here: {exc}")


def test_compiles_without_spills_in_shared_memory(sass):
    for info in sass.values():
        assert info["spill_bytes"] == 0 and info["shared_bytes"] <= 232448
        assert 240 in info["setmaxnreg"] and 24 in info["setmaxnreg"]   # consumers / producer


def test_overlap_runs_the_softmax_under_p_v_and_holds_p(sass):
    assert sass[0]["mufu_under_pv_wait0"] == 0                 # serial: waited at once
    assert sass[2]["mufu_under_pv_wait0"] == 66                # every exp2 of a 64 x 128 step
    assert sass[2]["rs_hazards_wait0"] == 0 and sass[0]["rs_hazards_wait0"] == 0


def test_bad_input_is_one_clear_error():
    torch = pytest.importorskip("torch")
    q = torch.zeros(1, 1, 100, 128, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="M % 128"):
        fa_gluon.gluon_fa(q, q, q)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["g-s3-o0", "g-s3-o2", "g-s3-o2-pp"])
@pytest.mark.parametrize("m", [1024, 2048])
def test_matches_sdpa_on_the_gpu(name, m):
    torch = pytest.importorskip("torch")
    from hwkernels import fa

    shape = fa.FAShape(batch=2, heads=8, seq_len=m, head_dim=128, sp=2)
    q, k, v = fa.generate_input(shape, seed=3)
    st, ov, pp, pers = fa_gluon.CANDIDATES[name]
    out, _ = fa_gluon.gluon_fa(q, k, v, stages=st, overlap=ov, pingpong=pp,
                               programs=None if pers else shape.n_tiles)
    torch.cuda.synchronize()
    ok, err = fa.check_local(out, fa.reference(q, k, v))
    assert ok, err
