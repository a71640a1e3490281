"""The fp8 diagnostic under Triton's interpreter on a tiny config (CPU)."""

import os

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from hwkernels import moe, moe_bench, moe_catalog, moe_diag  # noqa: E402
from xsim.moe.shapes import MoEShape  # noqa: E402


def test_diagnose_separates_the_two_linears(monkeypatch):
    shape = MoEShape(hidden=64, intermediate=64, experts=4, topk=2, tokens=24, precision="fp8",
                     block_m=16, block_n1=32, block_n2=32)
    cfg = moe_catalog.Config("tiny-fp8", shape, "zipf", 1.2, 0)
    monkeypatch.setattr(moe_bench, "SETTINGS", {"fp8": moe.KernelConfig(block_k=32)})
    (row,) = moe_diag.diagnose(cfg, [(0, 0)], sms=1, device=torch.device("cpu"))
    assert row["err_over_tol"] < 1.0 and abs(row["slope"] - 1.0) < 1e-2
    assert row["act_flip"] < 0.05 and row["l2_only"] < 1.0
