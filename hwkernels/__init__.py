"""GPU side of X-Stage: remote-store microbenchmarks over PyTorch symmetric memory.

Runs under `torchrun`; imports torch/cupy lazily so that `hwkernels.launch`, the sweep plan,
the statistics and the record writer import on a machine with no GPU. Never imports simpy,
plotly or xsim.
"""
