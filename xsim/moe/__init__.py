"""MoE layers for the MegaMoE application (paper Secs. 2.2, 4.2, 5.2): shapes, routing, the
per-rank row layout, the tile tables both schedules emit, the compute model and the selector.

Pure numpy: importable on the GPU machine (no simpy, plotly, numba or scipy at module level).
The fused kernel in ``hwkernels/`` executes exactly the tables :mod:`xsim.moe.schedule` emits.
"""
