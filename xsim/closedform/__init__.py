"""The paper's closed-form Burst–Gap model, as small pure functions (Sections 3–4).

``burst_gap``: eqs. 1–10 (steady state, isolated burst, design test).
``megamoe``: eqs. 11–16 (interleaved gap, critical-path stall, anti-starvation lead).
``fa_a2a``: eqs. 17–20 (FlashAttention Q-loop gap, M_ub*, completion-coupled exposure).
"""

from xsim.closedform.burst_gap import (  # noqa: F401
    DesignTest, IsolatedBurst, SteadyState, design_test, isolated_burst, pos, steady_state,
)
