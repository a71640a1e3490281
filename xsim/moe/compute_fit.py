"""Fitting measured mainloop records into :class:`xsim.moe.compute.MainloopModel`'s tables.

Measured records (experiment ``moe``, kind ``mainloop``, params ``{precision, block_m, block_n,
k_dim, kind: "l1" | "l2"}``, stats ``mainloop_us``; for ``l1`` ``block_n`` is ``block_n1``, the
intermediate columns) give the time per tile: for one (precision, block_m, block_n, kind) the
medians are fit by ``t = fixed_us + per_k_us * k_dim`` (least squares; one point: proportional,
:func:`fit_records`), so any ``k_dim`` is predicted from one calibration. Where records of the
very shape exist (params ``hidden`` and ``intermediate`` equal, any routing and schedule) their
mean is used instead (:func:`fit_shapes`): the fit spans shapes whose weight traffic differs, and
misses a measured shape by up to ~15 %. Records of the very layer (the same shape and the same
experts, top-k, tokens and EP: the per-expert GEMMs' rows too, read from the record's scenario
``config``) come first (``pool = "layer"``, :func:`fit_layers`): one (hidden, intermediate) is
run with 24 rows per expert (dsv4-flash, 1024 tokens) and with 128 (mimo-v2.5, 4096 tokens),
whose Linear-1 mainloops differ by ~18 %. The same records give the per-tile costs outside the
mainloop (:func:`fit_overheads`), the per-kernel fixed cost (:func:`fit_kernel_outside_us`) and
each kind's spread from tile to tile (:func:`fit_spreads`, :mod:`xsim.spread`).

Which records: for each key, the fused kernel's own per-tile times from the local-Combine
control (params ``source = "fused-local"``: ``hwkernels.moe_bench --combine local``, the same
kernel and tile tables with the Combine into device memory) are preferred where they exist
(:func:`preferred`); else the GEMM-only runs' (``source = "gemm-only"``: only one kind's tiles,
all SMs busy). The fused-local records carry the mainloop as the kernel really runs it (row
gathers, L1 and L2 tiles sharing the L2 cache) and no link information (no host-bound stores),
so the predictions stay "calibrate once, then predict". An overhead a preferred record lacks
(the fused L2 record has no ``wait_us``: its wait includes the dependency, which the DES models)
comes from the other source.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from xsim.spread import spread_cv


@dataclass(frozen=True)
class LinearFit:
    fixed_us: float
    per_k_us: float
    n_points: int

    def at(self, k_dim: int) -> float:
        return self.fixed_us + self.per_k_us * k_dim

FUSED_SOURCE = "fused-local"
OVERHEADS = ("wait_us", "store_us", "signal_us", "epilogue_us", "gap_us")
KERNEL_OUTSIDE = "kernel_outside_us"   # a local-Combine run's time outside every tile (per kernel)


def fit_kernel_outside_us(records: list[dict]) -> float:
    """The kernel's time outside its tiles (launch, prologue, exit: CUDA-event time minus the
    first-to-last stamp), the mean of the fused-local records' medians (0 without any)."""
    values = [float(r["stats"][KERNEL_OUTSIDE]["median"]) for r in _mainloop_records(records)
              if r["params"].get("source") == FUSED_SOURCE and r["params"].get("kind") == "l1"
              and KERNEL_OUTSIDE in r.get("stats", {})]
    return float(np.mean(values)) if values else 0.0


def _key_of(rec: dict) -> tuple:
    p = rec["params"]
    return (p["precision"], int(p["block_m"]), int(p["block_n"]), p["kind"])


def _mainloop_records(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("experiment") == "moe" and r.get("kind") == "mainloop"
            and r.get("check", {}).get("ok", False)]


def preferred(records: list[dict]) -> list[dict]:
    """The checked mainloop records, fused-local ones only for a key that has any."""
    ok = _mainloop_records(records)
    fused = {_key_of(r) for r in ok if r["params"].get("source") == FUSED_SOURCE}
    return [r for r in ok if _key_of(r) not in fused or r["params"].get("source") == FUSED_SOURCE]


def fit_records(records: list[dict]) -> dict:
    """(precision, block_m, block_n, kind) -> LinearFit over the records' median mainloop_us."""
    groups: dict[tuple, list[tuple[float, float]]] = {}
    for rec in preferred(records):
        p, stats = rec.get("params", {}), rec.get("stats", {})
        if rec.get("experiment") != "moe" or rec.get("kind") != "mainloop" or "mainloop_us" not in stats:
            continue
        if not rec.get("check", {}).get("ok", False):
            continue
        key = (p["precision"], int(p["block_m"]), int(p["block_n"]), p["kind"])
        groups.setdefault(key, []).append((float(p["k_dim"]), float(stats["mainloop_us"]["median"])))
    fits = {}
    for key, points in groups.items():
        k = np.array([x for x, _ in points])
        t = np.array([y for _, y in points])
        if len(np.unique(k)) >= 2:
            slope, intercept = np.polyfit(k, t, 1)
            fits[key] = LinearFit(float(intercept), float(slope), len(points))
        else:
            fits[key] = LinearFit(0.0, float(t.mean() / k[0]), len(points))
    return fits


def fit_shapes(records: list[dict]) -> dict:
    """(precision, block_m, block_n, kind, hidden, intermediate) -> the mean over the preferred
    records of that very shape (every routing and schedule) of each record's mean mainloop_us:
    a program's time is the sum of its tiles', so the mean is the statistic that adds up."""
    groups: dict[tuple, list[float]] = {}
    for rec in preferred(records):
        p, stats = rec["params"], rec.get("stats", {})
        if "hidden" in p and "intermediate" in p and "mainloop_us" in stats:
            value = stats["mainloop_us"].get("mean", stats["mainloop_us"]["median"])
            groups.setdefault(_key_of(rec) + (int(p["hidden"]), int(p["intermediate"])), []).append(float(value))
    return {key: float(np.mean(v)) for key, v in groups.items()}


def fit_spreads(records: list[dict]) -> dict:
    """The mainloop's coefficient of variation per tile kind, (p90 - p10) / (2.563 mean) of each
    preferred record, averaged per shape key (as :func:`fit_shapes`) and per fit key (every shape)."""
    groups: dict[tuple, list[float]] = {}
    for rec in preferred(records):
        p, st = rec["params"], rec.get("stats", {}).get("mainloop_us", {})
        if not all(k in st for k in ("p10", "p90", "mean")) or not st["mean"] > 0:
            continue
        cv = spread_cv(float(st["p10"]), float(st["p90"]), float(st["mean"]))
        groups.setdefault(_key_of(rec), []).append(cv)
        if "hidden" in p and "intermediate" in p:
            groups.setdefault(_key_of(rec) + (int(p["hidden"]), int(p["intermediate"])), []).append(cv)
    return {key: float(np.mean(v)) for key, v in groups.items()}


LAYER_KEYS = ("experts", "topk", "tokens", "ep")


@lru_cache(maxsize=256)
def scenario_layer(config: str) -> tuple | None:
    """(experts, topk, tokens, ep) of a shipped scenario (None for a name that is not one)."""
    from xsim.scenario import ScenarioError, load_scenario

    try:
        params = load_scenario(config).params
    except ScenarioError:
        return None
    return tuple(int(params[k]) for k in LAYER_KEYS) if all(k in params for k in LAYER_KEYS) else None


def _record_layer(rec: dict) -> tuple | None:
    """The layer a mainloop record ran: its own params where it carries them, else its scenario's."""
    p = rec["params"]
    if all(k in p for k in LAYER_KEYS):
        return tuple(int(p[k]) for k in LAYER_KEYS)
    return scenario_layer(p["config"]) if isinstance(p.get("config"), str) else None


def fit_layers(records: list[dict], by: tuple = ()) -> tuple[dict, dict]:
    """(means, CVs) keyed by the shape key + (experts, topk, tokens, ep): as :func:`fit_shapes` and
    :func:`fit_spreads`, over the preferred records of the very layer (every routing and schedule;
    ``by``: record params that key them too, e.g. ``("schedule",)``)."""
    means: dict[tuple, list[float]] = {}
    cvs: dict[tuple, list[float]] = {}
    for rec in preferred(records):
        p, st = rec["params"], rec.get("stats", {}).get("mainloop_us", {})
        layer = _record_layer(rec) if "hidden" in p and "intermediate" in p else None
        if layer is None or "mean" not in st:
            continue
        if not all(k in p for k in by):
            continue
        key = _key_of(rec) + (int(p["hidden"]), int(p["intermediate"])) + layer + tuple(p[k] for k in by)
        means.setdefault(key, []).append(float(st["mean"]))
        if "p10" in st and "p90" in st and st["mean"] > 0:
            cvs.setdefault(key, []).append(spread_cv(float(st["p10"]), float(st["p90"]), float(st["mean"])))
    return ({k: float(np.mean(v)) for k, v in means.items()}, {k: float(np.mean(v)) for k, v in cvs.items()})


def fit_overheads(records: list[dict]) -> dict:
    """Key -> mean over the records of each per-tile overhead's median (wait, store, signal),
    from the preferred records where they have it, else from the others."""
    ok = _mainloop_records(records)
    first, rest = preferred(ok), ok
    out: dict[tuple, dict[str, float]] = {}
    for pool, fill_only in ((first, False), (rest, True)):
        groups: dict[tuple, dict[str, list[float]]] = {}
        for rec in pool:
            stats = rec.get("stats", {})
            for name in OVERHEADS:
                if name in stats:
                    groups.setdefault(_key_of(rec), {}).setdefault(name, []).append(float(stats[name]["median"]))
        for key, d in groups.items():
            have = out.setdefault(key, {})
            for name, v in d.items():
                if not (fill_only and name in have):
                    have[name] = float(np.mean(v))
    return out
