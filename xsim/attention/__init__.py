"""FlashAttention fused with the Ulysses post-attention All-to-All (paper Sections 4.3, 5.3).

``shape``: one rank's attention problem, its output tiles in the persistent kernel's order and
which of them leave over the link (the index math is :mod:`hwkernels.fa_layout`'s, not a copy).
``qloop``: the Q-loop gap G_Qloop(M) = fixed + sigma ceil(M / b_n), fitted once on FA-only records.
``predict``: G*, M_ub* (eq. 20), E_drain (eqs. 18-19), E_cc (eq. 17), T_fused and T_cc.
"""
