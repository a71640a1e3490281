"""The Triton cross-check kernel writes the same pattern (Triton's CPU interpreter)."""

from interpreter import run_interpreted

CODE = """
import torch
from hwkernels import pattern, triton_store
k, b, n = 3, 16384, 2
buf = torch.zeros(k * b * n, dtype=torch.uint8)
pattern.torch_poison(buf, buf.numel())
triton_store.launch(buf.view(torch.int32), k, b, n, num_warps=1)
print(pattern.torch_check(buf, k, b, n))
"""


def test_triton_kernel_matches_pattern_in_interpreter():
    assert run_interpreted(CODE, timeout_s=300) == ["(True, 0.0)"]
