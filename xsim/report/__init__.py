"""Predicted vs measured reports: one module per experiment (numbers), figures kept separate.

``micro``: the remote-store microbenchmarks (the paper's Fig. 3 for our hardware).
``moe`` and ``fa-a2a``: no records exist yet; :data:`EXPERIMENTS` says which are available.
"""

EXPERIMENTS = ("micro", "moe", "fa-a2a")
