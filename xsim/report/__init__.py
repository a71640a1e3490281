"""Predicted vs measured reports: one module per experiment (numbers), figures kept separate.

``micro``: the remote-store microbenchmarks (the paper's Fig. 3 for our hardware).
``page``: the page model every report is laid out with (``micro_page`` for micro,
``sim_page`` for one ``xsim simulate --out`` run); ``html``: PNG export.
``moe`` and ``fa-a2a``: no records exist yet; :data:`EXPERIMENTS` says which are available.
"""

EXPERIMENTS = ("micro", "moe", "fa-a2a")
