"""X-Stage: model and simulate what happens to a GPU kernel's remote stores after issue.

This package is CPU-only and light to import: it never imports torch, triton or a GPU
runtime, and importing ``xsim`` itself pulls in nothing heavier than the standard library
(SimPy, numba and plotly load only in the modules that use them).
"""

__version__ = "0.1.0"
