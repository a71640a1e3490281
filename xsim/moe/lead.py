"""Algorithm 1's lead as a prediction of the what-if tool: the DES picks it from a few candidates.

eq. 16's D_knee is a lower bound on the lead that stops starving Linear-2; past it a longer
lead costs the Linear-2 tiles' head start and a shorter one starves them, and where the
balance lies depends on the config (benchmarks/results/moe_lead_knee.txt, one seed on an older
profile: dsv4-flash bf16 zipf 4096 is best at 3 x; benchmarks/results/moe_lead_pick.txt: the picks
with the seed mean). For each config :func:`pick_lead` simulates
the interleaved table at every candidate lead (:data:`MULTIPLES` x D_knee, rounded up as the
scheduler's default is, at least 1, duplicates dropped) and keeps the lead of the lowest
predicted kernel time, the mean over the same spread seeds the report averages. Only the
prediction decides: nothing measured at any lead enters (the compute model is the calibrated
one, made once from the records). A tie keeps the default lead ``ceil(2 D_knee)``, then the
shorter one. It costs (candidates x seeds) interleaved runs per config, so the catalog ships
the pick in its TOML files (``benchmarks/moe_catalog.py --write``) instead of every simulate
making it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from xsim.moe.schedule import d_knee, default_lead

MULTIPLES = (1.0, 1.5, 2.0, 3.0, 4.0)


@dataclass(frozen=True)
class LeadPick:
    lead: int                    # the picked lead, rows
    default: int                 # ceil(2 D_knee)
    d_knee: float
    candidates: tuple            # ((multiple, lead, predicted interleaved kernel_us), ...) in lead order
    spread_seeds: tuple          # (first, last) seed averaged

    def predicted_us(self, lead: int) -> float:
        return next(t for _, c, t in self.candidates if c == lead)

    def to_dict(self) -> dict:
        return asdict(self)


def candidate_leads(knee: float, multiples=MULTIPLES) -> list[tuple[float, int]]:
    """(multiple, lead) per distinct lead, ascending: max(1, ceil(m x D_knee)) as the default rounds."""
    if not (isinstance(knee, (int, float)) and math.isfinite(knee) and knee >= 0):
        raise ValueError(f'"d_knee" must be a finite number >= 0, got {knee!r}')
    if not multiples or any(not (isinstance(m, (int, float)) and math.isfinite(m) and m > 0) for m in multiples):
        raise ValueError(f'"multiples" must be finite numbers > 0, got {multiples!r}')
    out: dict[int, float] = {}
    for m in sorted(multiples):
        out.setdefault(max(1, math.ceil(m * knee - 1e-9)), float(m))
    return [(m, lead) for lead, m in sorted(out.items())]


def pick_lead(params: dict, platform, multiples=MULTIPLES, spread_seeds: int = 4, spread_seed: int = 0,
              engine: str = "fast", mainloop_records: list[dict] | None = None) -> LeadPick:
    """The lead of the lowest DES interleaved kernel time (mean over ``spread_seeds`` seeds) among
    the candidates; ``params`` are resolved builder params (their own ``lead`` is ignored)."""
    from xsim.builders import moe

    if not isinstance(spread_seeds, int) or spread_seeds < 1:
        raise ValueError(f'"spread_seeds" must be a whole number >= 1, got {spread_seeds!r}')
    base = {**params, "schedule": "interleaved", "spread_seeds": spread_seeds, "spread_seed": spread_seed,
            "lead": -1.0}
    cfg = moe.Config(base, platform, mainloop_records)
    knee, default = d_knee(cfg.shape, cfg.n_streams), default_lead(cfg.shape, cfg.n_streams)
    rows = []
    for m, lead in candidate_leads(knee, multiples):
        _, s = moe.simulate({**base, "lead": float(lead)}, platform, engine, trace=False,
                            mainloop_records=mainloop_records)
        rows.append((m, lead, float(s["kernel_us"])))
    best = min(rows, key=lambda r: (r[2], r[1] != default, r[1]))
    return LeadPick(best[1], default, knee, tuple(rows), (spread_seed, spread_seed + spread_seeds - 1))
