"""Seeded top-k routing: balanced, Zipf-skewed over experts, one hot expert, or balanced in token blocks.

``route`` covers the tokens of every rank: ``topk_ids`` has ``tokens * ep`` rows and token
``t`` lives on rank ``t // tokens`` (with ``ep = 1`` that is the contract's ``[tokens, topk]``).

- ``balanced``: token t takes experts ``(t * topk + k) mod experts`` relabelled by a seeded
  permutation, so every expert gets exactly the same rows when ``tokens * ep * topk`` is a
  multiple of ``experts`` (and at most one row more otherwise).
- ``zipf``: expert popularity ``p_e ~ 1 / rank_e ** skew`` over a seeded ranking of the
  experts; each token draws ``topk`` experts i.i.d. from ``p`` and draws every repeat again
  until its experts are distinct (after 200 rounds, which only happens when topk is close to
  the number of experts, Gumbel top-k for the tokens left).
- ``hot``: one seeded hot expert is among each token's choices with probability ``skew``
  (0 < skew <= 1, its share of tokens); every other choice is uniform over the other experts.
- ``blocked``: balanced, but each expert's rows are consecutive tokens: choice j of token t is
  expert ``(j * tokens + t) * experts // (tokens * topk)`` (seeded relabel), so an m-block's
  Combine rows lie side by side in the destination instead of every few tokens (the beside
  probes' control for where the stores land; distinct per token because choice j spans
  experts ``[j e / k, (j + 1) e / k)``).

Router weights are a seeded softmax over ``topk`` logits (float32, sum 1 per token).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xsim.moe.shapes import MoEShape

ROUTINGS = ("balanced", "zipf", "hot", "blocked")
_MAX_REDRAWS = 200


@dataclass(frozen=True, eq=False)
class Routing:
    topk_ids: np.ndarray      # int32[tokens * ep, topk], distinct experts per token
    topk_weights: np.ndarray  # float32[tokens * ep, topk], sum 1 per token
    kind: str
    skew: float
    seed: int

    def expert_rows(self, experts: int) -> np.ndarray:
        """int64[experts]: routed rows per (global) expert."""
        return np.bincount(self.topk_ids.ravel(), minlength=experts)


def route(shape: MoEShape, kind: str = "balanced", skew: float = 1.2, seed: int = 0) -> Routing:
    if kind not in ROUTINGS:
        raise ValueError(f'"routing" must be one of {", ".join(ROUTINGS)}, got {kind!r}')
    rng = np.random.default_rng(seed)
    n, e, k = shape.tokens * shape.ep, shape.experts, shape.topk
    if kind == "balanced":
        ids = _balanced(n, e, k, rng)
    elif kind == "blocked":
        ids = _blocked(n, e, k, rng)
    elif kind == "zipf":
        if not skew >= 0:
            raise ValueError(f'"skew" must be >= 0 for zipf routing, got {skew!r}')
        ids = _weighted(n, k, _zipf_weights(e, skew, rng), rng)
    else:
        if not 0 < skew <= 1:
            raise ValueError(f'"skew" must be in (0, 1] for hot routing (the hot expert\'s share), got {skew!r}')
        ids = _hot(n, e, k, skew, rng)
    logits = rng.standard_normal((n, k))
    w = np.exp(logits - logits.max(axis=1, keepdims=True))
    w = (w / w.sum(axis=1, keepdims=True)).astype(np.float32)
    return Routing(ids.astype(np.int32), w, kind, float(skew), int(seed))


def _balanced(n: int, e: int, k: int, rng) -> np.ndarray:
    relabel = rng.permutation(e)
    return relabel[(np.arange(n)[:, None] * k + np.arange(k)[None, :]) % e]


def _blocked(n: int, e: int, k: int, rng) -> np.ndarray:
    """Choice j of token t: expert (j n + t) e // (n k), relabelled (MoEShape keeps k <= e: distinct)."""
    relabel = rng.permutation(e)
    return relabel[((np.arange(k)[None, :] * n + np.arange(n)[:, None]) * e) // (n * k)]


def _zipf_weights(e: int, skew: float, rng) -> np.ndarray:
    ranks = rng.permutation(e) + 1.0
    p = ranks ** -skew
    return p / p.sum()


def _weighted(n: int, k: int, p: np.ndarray, rng) -> np.ndarray:
    """k distinct experts per token: k i.i.d. draws from p, each repeat drawn again until none."""
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    draw = lambda size: np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), len(p) - 1)  # noqa: E731
    ids = draw((n, k))
    active = np.arange(n)
    for _ in range(_MAX_REDRAWS):
        sub = ids[active]
        order = np.argsort(sub, axis=1, kind="stable")
        srt = np.take_along_axis(sub, order, axis=1)
        repeat = np.zeros_like(sub, dtype=bool)
        np.put_along_axis(repeat, order[:, 1:], srt[:, 1:] == srt[:, :-1], axis=1)
        rows, cols = np.nonzero(repeat)
        if rows.size == 0:
            return ids
        sub[rows, cols] = draw(rows.size)
        ids[active] = sub
        active = active[repeat.any(axis=1)]
    # tokens that still repeat (topk close to the experts with any weight): Gumbel top-k
    keys = np.log(np.maximum(p, 1e-300))[None, :] + rng.gumbel(size=(len(active), len(p)))
    ids[active] = np.argpartition(-keys, k - 1, axis=1)[:, :k]
    return ids


def _hot(n: int, e: int, k: int, share: float, rng) -> np.ndarray:
    hot = int(rng.integers(e))
    p = np.full(e, 1.0 / (e - 1) if e > 1 else 1.0)
    p[hot] = 0.0 if e > 1 else 1.0
    ids = _weighted(n, k, p, rng) if e > 1 else np.zeros((n, k), np.int64)
    takes_hot = rng.random(n) < share
    slot = rng.integers(k, size=n)
    rows = np.nonzero(takes_hot & ~(ids == hot).any(axis=1))[0]
    ids[rows, slot[rows]] = hot
    return ids
