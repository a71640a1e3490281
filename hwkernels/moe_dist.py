"""The fused MoE layer on N >= 2 ranks (EP = N): inputs, Dispatch, Combine targets, reference.

One seeded routing covers every rank's tokens (``route`` with ``shape.ep = N``: global token t
lives on rank t // tokens), so every rank knows, without asking, where each token's experts
are; ``expert_layout(shape, routing, rank)`` gives the rows this rank computes (global tokens).

- Inputs: rank r makes only its own tokens x_r [tokens, H] (a generator seeded by (seed, r)).
  Global expert e's weights come from a generator seeded by (seed, e), so any rank can make any
  expert's weights (its own E/N for the kernel; the others, one rank's group at a time, for the
  reference), and they do not depend on N. fp8: x's per-tensor scale is the maximum over
  ranks; the static activation scale is the maximum over ranks of each rank's activation amax
  over the tokens it received and its local experts.
- Dispatch (before the kernel, outside its timing, as on one GPU where x is in HBM before the
  kernel starts and Linear-1 gathers rows from it): each token goes once to every rank that
  holds at least one of its top-k experts (one copy serves all that rank's slots of it: the
  kernel reads A rows by token), by one ``all_to_all_single`` whose counts follow from the
  routing (also exchanged, and checked against the plan). The receiver scatters the rows into
  a [tokens * N, H] buffer at their global token index: the buffer Linear-1's gather reads.
  Rows it did not receive hold NaN, so a gather of a token it was not sent fails the check.
- Combine (moe_kernels.py, EP > 1): an L2 tile's row of token t is stored into rank
  t // tokens's [tokens, topk, H] receive buffer (``dest.remote(owner)``, symmetric memory
  over NVLink); rows of the rank's own tokens go into its own buffer (local HBM).
- Check: after a barrier each rank compares its own receive buffer, every slot, with the
  torch reference of its own tokens (``own_reference``: its own x, every expert's weights).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from xsim.moe.routing import Routing
from xsim.moe.shapes import MoEShape

_SEED_STRIDE = 1 << 20          # seed s: expert e -> s * stride + 1 + e; rank r -> ... + HALF + r
_SEED_HALF = 1 << 19


def world_problem(args, world: int) -> str:
    """Why this target cannot run with ``world`` processes ('' if it can)."""
    from .destination import DestinationError, check_kind

    if args.target == "host" and world > 1:
        return "--target host runs one process (ep = 1); use --target peer for N > 1"
    try:
        check_kind(args.target, world)
    except DestinationError as e:
        return str(e)
    if world > 1 and (args.tune or args.combine == "local"):
        return "--tune and --combine local are one-GPU measurements (--target host)"
    return ""


def with_ep(cfg, world: int):
    """The config on ``world`` ranks (shape.ep = world); ValueError (one line) if it cannot be."""
    if cfg.shape.ep not in (1, world):
        raise ValueError(f'config {cfg.name}: "ep" ({cfg.shape.ep}) must be 1 or the number of '
                         f"ranks ({world})")
    return replace(cfg, shape=replace(cfg.shape, ep=world))


@dataclass(frozen=True)
class DispatchPlan:
    """One rank's Dispatch: global token ids sent (grouped by destination rank, ascending) and
    received (grouped by source rank, ascending: all_to_all_single's output order)."""

    send_tokens: np.ndarray   # int64[sum(send_counts)]
    send_counts: np.ndarray   # int64[N]
    recv_tokens: np.ndarray   # int64[sum(recv_counts)]
    recv_counts: np.ndarray   # int64[N]


def needed_on(shape: MoEShape, topk_ids: np.ndarray) -> np.ndarray:
    """bool [tokens * N, N]: token t has at least one top-k expert on rank r."""
    ids = np.asarray(topk_ids, dtype=np.int64)
    if ids.shape != (shape.tokens * shape.ep, shape.topk):
        raise ValueError(f"routing has shape {ids.shape}, expected "
                         f"{(shape.tokens * shape.ep, shape.topk)}")
    if ids.min(initial=0) < 0 or ids.max(initial=0) >= shape.experts:
        raise ValueError(f'expert ids must be in [0, {shape.experts})')
    need = np.zeros((ids.shape[0], shape.ep), dtype=bool)
    need[np.arange(ids.shape[0])[:, None], ids // shape.experts_local] = True
    return need


def dispatch_plan(shape: MoEShape, topk_ids: np.ndarray, rank: int) -> DispatchPlan:
    if not 0 <= rank < shape.ep:
        raise ValueError(f'"rank" must be in [0, {shape.ep}), got {rank!r}')
    need, t = needed_on(shape, topk_ids), shape.tokens
    mine = need[rank * t:(rank + 1) * t]
    send = [rank * t + np.nonzero(mine[:, r])[0] for r in range(shape.ep)]
    recv = [s * t + np.nonzero(need[s * t:(s + 1) * t, rank])[0] for s in range(shape.ep)]
    as_i64 = lambda parts: np.concatenate(parts).astype(np.int64)  # noqa: E731
    return DispatchPlan(as_i64(send), np.array([len(p) for p in send], np.int64),
                        as_i64(recv), np.array([len(p) for p in recv], np.int64))


def own_routing(shape: MoEShape, routing: Routing, rank: int) -> Routing:
    """Rank ``rank``'s tokens renumbered 0 .. tokens-1 (rows past them routed nowhere, id -1),
    so ``expert_layout(shape, own, rank=g)`` lists the rows of this rank's tokens at group g."""
    t = shape.tokens
    ids = np.full_like(routing.topk_ids, -1)
    w = np.zeros_like(routing.topk_weights)
    ids[:t] = routing.topk_ids[rank * t:(rank + 1) * t]
    w[:t] = routing.topk_weights[rank * t:(rank + 1) * t]
    return Routing(ids, w, routing.kind, routing.skew, routing.seed)


# -- torch (lazy) ------------------------------------------------------------------------------

def _generator(device, seed: int):
    import torch

    return torch.Generator(device=device).manual_seed(int(seed))


def own_tokens(shape: MoEShape, seed: int, rank: int, device):
    """Rank ``rank``'s token rows x_r [tokens, H] bf16."""
    import torch

    g = _generator(device, seed * _SEED_STRIDE + _SEED_HALF + rank)
    return torch.randn(shape.tokens, shape.hidden, generator=g, device=device).to(torch.bfloat16)


def group_weights(shape: MoEShape, seed: int, group: int, device):
    """bf16 w1 [E/N, 2I, H] and w2 [E/N, H, I] (K-major, as moe_reference.MoEData) of rank
    ``group``'s experts, global expert e from its own generator (the same bits on every rank)."""
    import torch

    e_local, h, inter = shape.experts_local, shape.hidden, shape.intermediate
    w1 = torch.empty(e_local, 2 * inter, h, dtype=torch.bfloat16, device=device)
    w2 = torch.empty(e_local, h, inter, dtype=torch.bfloat16, device=device)
    for i in range(e_local):
        g = _generator(device, seed * _SEED_STRIDE + 1 + group * e_local + i)
        w1[i] = (torch.randn(2 * inter, h, generator=g, device=device) * h ** -0.5).to(w1.dtype)
        w2[i] = (torch.randn(h, inter, generator=g, device=device) * inter ** -0.5).to(w2.dtype)
    return w1, w2


def group_data(shape: MoEShape, seed: int, group: int, x, sx: float, sa: float):
    """moe_reference.MoEData of rank ``group``'s experts reading token rows ``x`` (already in the
    kernel's dtype; fp8: quantized with scale sx)."""
    import torch

    from .moe_reference import MoEData, _quantize

    w1, w2 = group_weights(shape, seed, group, x.device)
    if shape.precision == "bf16":
        return MoEData(x, w1, w2, torch.ones(2 + 2 * shape.experts_local, device=x.device), "bf16")
    w1q, sw1 = _quantize(w1, per_expert=True)
    w2q, sw2 = _quantize(w2, per_expert=True)
    head = torch.tensor([sx, sa], dtype=torch.float32, device=x.device)
    return MoEData(x, w1q, w2q, torch.cat([head, sw1, sw2]).float(), "fp8")


def kernel_tokens(shape: MoEShape, x, ranks) -> tuple[object, float]:
    """(x in the kernel's dtype, sx): bf16 as is; fp8 e4m3 with the scale max over ranks."""
    import torch

    from .moe_reference import FP8_MAX

    if shape.precision == "bf16":
        return x, 1.0
    sx = ranks.max_of(float(x.abs().max().float().clamp_min(1e-12))) / FP8_MAX
    return (x.float() / sx).to(torch.float8_e4m3fn), sx


def dispatch(shape: MoEShape, plan: DispatchPlan, x_own, ranks):
    """The Dispatch all-to-all: [tokens * N, H] receive buffer (NaN where nothing arrived)."""
    import torch

    counts = torch.as_tensor(plan.send_counts, dtype=torch.int64).to(x_own.device)
    got = torch.empty_like(counts)
    ranks.all_to_all(got, counts, [1] * ranks.world, [1] * ranks.world)
    if got.cpu().tolist() != plan.recv_counts.tolist():
        raise RuntimeError(f"rank {ranks.rank}: Dispatch counts {got.cpu().tolist()} differ "
                           f"from the routing's {plan.recv_counts.tolist()}")
    dev, raw = x_own.device, x_own.view(torch.uint8)      # bytes: fp8 rows move as they are
    first = shape.tokens * ranks.rank
    send = raw[torch.as_tensor(plan.send_tokens - first).to(dev)].contiguous()
    recv = torch.empty(len(plan.recv_tokens), raw.shape[1], dtype=torch.uint8, device=dev)
    ranks.all_to_all(recv, send, plan.recv_counts, plan.send_counts)
    x_recv = torch.full((shape.tokens * shape.ep, shape.hidden), float("nan"),
                        device=dev).to(x_own.dtype)
    x_recv.view(torch.uint8)[torch.as_tensor(plan.recv_tokens).to(dev)] = recv
    return x_recv


def rank_inputs(shape: MoEShape, routing: Routing, seed: int, ranks):
    """(kernel MoEData with the Dispatch's receive buffer as x, own x in the kernel's dtype)."""
    from .moe_reference import FP8_MAX, MoEData, _act_amax

    x, sx = kernel_tokens(shape, own_tokens(shape, seed, ranks.rank, ranks.device), ranks)
    plan = dispatch_plan(shape, routing.topk_ids, ranks.rank)
    data = group_data(shape, seed, ranks.rank, dispatch(shape, plan, x, ranks), sx, 1.0)
    if shape.precision == "fp8":
        import torch

        idx = torch.as_tensor(plan.recv_tokens).to(data.x.device)
        got = data.x.view(torch.uint8)[idx].view(data.x.dtype)
        amax = _act_amax(MoEData(got, data.w1, data.w2, data.scales, "fp8")) if len(got) else 0.0
        data.scales[1] = max(ranks.max_of(amax), 1e-12) / FP8_MAX
    return data, x


def own_reference(shape: MoEShape, routing: Routing, rank: int, x_own, scales, seed: int):
    """[tokens, topk, H] float32: slot (t, k) of this rank's token t = w[t,k] * FFN_e(x[t]),
    e on any rank (moe_reference.reference, one rank's group of experts at a time)."""
    import torch

    from xsim.moe.layout import expert_layout

    from .moe_reference import reference

    sx, sa = (float(v) for v in scales[:2].tolist())
    own = own_routing(shape, routing, rank)
    out = torch.zeros(shape.tokens, shape.topk, shape.hidden, dtype=torch.float32,
                      device=x_own.device)
    for g in range(shape.ep):
        lay = expert_layout(shape, own, rank=g)
        if lay.n_rows:
            out += reference(group_data(shape, seed, g, x_own, sx, sa), lay, shape.topk)
    return out


def receive_views(shape: MoEShape, dest, world: int):
    """Every rank's [tokens, topk, H] bf16 receive buffer as seen from this rank."""
    import torch

    n = shape.tokens * shape.topk * shape.hidden * 2
    return [dest.remote(o)[:n].view(torch.bfloat16).view(shape.tokens, shape.topk, shape.hidden)
            for o in range(world)]


def config_inputs(cfg, ranks, dest):
    """(data, layout, reference, own receive buffer, every rank's buffer) of one config here."""
    from xsim.moe.layout import expert_layout
    from xsim.moe.routing import route

    shape = cfg.shape
    routing = route(shape, cfg.routing, cfg.skew, cfg.seed)
    lay = expert_layout(shape, routing, rank=ranks.rank)
    data, x = rank_inputs(shape, routing, cfg.seed, ranks)
    ref = own_reference(shape, routing, ranks.rank, x, data.scales, cfg.seed)
    views = receive_views(shape, dest, ranks.world)
    return data, lay, ref, views[ranks.rank], views


def join(configs):
    """Join the torchrun job: (Ranks, a peer destination large enough for every config)."""
    from . import destination, symm
    from .ranks import Ranks

    d = symm.init()
    nbytes = max(c.shape.tokens * c.shape.topk * c.shape.hidden * 2 for c in configs)
    return Ranks(d), destination.make("peer", nbytes, d)
