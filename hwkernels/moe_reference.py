"""Fused MoE layer's inputs, torch reference and check (launcher in moe.py, kernel in moe_kernels.py).

    data = make_inputs(shape, seed=0, device="cuda")          # x, w1, w2 (+ fp8 scales)
    ref = reference(data, layout, shape.topk)                  # [T, topk, H] float32
    ok, err = check(out, ref)                                  # out: the kernel's [T, topk, H]

`layout` follows MOE_CONTRACT.md (xsim.moe.layout.ExpertLayout; any object with the same
fields works). Precision fp8 is W8A8 e4m3 with per-tensor scales: sx for x, sw1[e] / sw2[e]
per expert weight, and a static activation scale sa (the reference's activation amax / 448,
computed once per input).
"""

from dataclasses import dataclass

import numpy as np

FP8_MAX = 448.0


@dataclass
class MoEData:
    """Kernel inputs on one device. fp8: x/w1/w2 are e4m3, scales fp32 [2 + 2E].

    Weights are stored K-major, w1 [E, 2I, H] and w2 [E, H, I]: w1[e].t() and w2[e].t()
    are the contract's [H, 2I] and [I, H] (views, no copy). Tensor-core fp8 dots want both
    operands K-major, and cuBLAS (_scaled_mm) wants the same column-major B.
    """

    x: object
    w1: object
    w2: object
    scales: object
    precision: str


def _quantize(t, per_expert: bool):
    """e4m3 copy of t and its fp32 scale(s) (amax / 448: per tensor, or per leading index)."""
    import torch

    parts = list(t) if per_expert else [t]
    q = torch.empty(t.shape, dtype=torch.float8_e4m3fn, device=t.device)
    scales = torch.empty(len(parts), dtype=torch.float32, device=t.device)
    for i, part in enumerate(parts):
        scales[i] = part.abs().max().float().clamp_min(1e-12) / FP8_MAX
        (q[i] if per_expert else q).copy_((part.float() / scales[i]).to(torch.float8_e4m3fn))
    return q, scales


def make_inputs(shape, seed: int = 0, device="cpu") -> MoEData:
    """Seeded x [T, H] and weights (generated on `device`), scaled so activations stay O(1)."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    e_local = shape.experts // shape.ep
    h, inter = shape.hidden, shape.intermediate
    bf = torch.bfloat16

    def randn(*size, scale=1.0):
        out = torch.empty(*size, dtype=bf, device=device)
        for i in range(size[0]):      # one expert at a time: no fp32 copy of every weight
            out[i] = (torch.randn(*size[1:], generator=g, device=device) * scale).to(bf)
        return out

    x = randn(shape.tokens * shape.ep, h)     # EP > 1: every rank's tokens (receive buffer)
    w1 = randn(e_local, 2 * inter, h, scale=h ** -0.5)       # K-major (see MoEData)
    w2 = randn(e_local, h, inter, scale=inter ** -0.5)
    if shape.precision == "bf16":
        return MoEData(x, w1, w2, torch.ones(2 + 2 * e_local, device=device), "bf16")
    xq, sx = _quantize(x, per_expert=False)
    w1q, sw1 = _quantize(w1, per_expert=True)
    w2q, sw2 = _quantize(w2, per_expert=True)
    one = torch.ones(1, device=device)
    data = MoEData(xq, w1q, w2q, torch.cat([sx, one, sw1, sw2]).float(), "fp8")
    data.scales[1] = _act_amax(data) / FP8_MAX
    return data


def _act_amax(data: MoEData) -> float:
    """Largest |activation| over every expert and token (for the static fp8 act scale)."""
    import torch

    x = (data.x.float() * data.scales[0]).to(torch.bfloat16)
    e_local = data.w1.shape[0]
    amax = torch.zeros((), device=data.x.device)
    for e in range(e_local):
        w1 = (data.w1[e].t().float() * data.scales[2 + e]).to(torch.bfloat16)
        inter = w1.shape[1] // 2
        h = (x @ w1).float()
        act = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
        amax = torch.maximum(amax, act.abs().max())
    return max(float(amax), 1e-12)


def reference(data: MoEData, layout, topk: int) -> "object":
    """[T, topk, H] float32 on data's device: slot (t, k) = w[t,k] * FFN_e(x[t]).

    fp32 math on the kernel's inputs; the activation is rounded to the kernel's act dtype
    (bf16, or e4m3 with scale sa) before Linear-2. Slots routed to other ranks stay 0.
    """
    import torch

    dev = data.x.device
    tokens, hidden = data.x.shape
    out = torch.zeros(tokens, topk, hidden, dtype=torch.float32, device=dev)
    fp8 = data.precision == "fp8"
    sc = data.scales.float()
    e_local = data.w1.shape[0]
    as_dev = lambda a, dt: torch.as_tensor(np.asarray(a)).to(dt).to(dev)  # noqa: E731
    row_token = as_dev(layout.row_token, torch.int64)
    row_slot = as_dev(layout.row_slot, torch.int64)
    row_weight = as_dev(layout.row_weight, torch.float32)
    rows = np.asarray(layout.expert_rows)
    for e in range(e_local):
        r0, r1 = int(rows[e]), int(rows[e + 1])
        if r1 == r0:
            continue
        x = data.x[row_token[r0:r1]].float() * (sc[0] if fp8 else 1.0)
        w1 = data.w1[e].t().float() * (sc[2 + e] if fp8 else 1.0)
        w2 = data.w2[e].t().float() * (sc[2 + e_local + e] if fp8 else 1.0)
        inter = w1.shape[1] // 2
        h = x @ w1
        act = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
        if fp8:
            q = (act / sc[1]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
            act = q.float() * sc[1]
        else:
            act = act.to(torch.bfloat16).float()
        out[row_token[r0:r1], row_slot[r0:r1]] = (act @ w2) * row_weight[r0:r1, None]
    return out


def routed_slots(layout, tokens: int, topk: int, first_token: int = 0):
    """bool [tokens, topk] CPU tensor: the slots of tokens first_token.. this layout writes."""
    import torch

    mask = torch.zeros(tokens, topk, dtype=torch.bool)
    tok = np.asarray(layout.row_token, dtype=np.int64) - first_token
    keep = (tok >= 0) & (tok < tokens)
    mask[torch.as_tensor(tok[keep]), torch.as_tensor(np.asarray(layout.row_slot)[keep])] = True
    return mask


def check(out, ref, routed=None, rel_tol: float | None = None) -> tuple[bool, float]:
    """(ok, max_abs_err): out [T, topk, H] bf16 against the reference [T, topk, H].

    routed: bool [T, topk], the slots to compare (None: all). Tolerance: max_abs_err <=
    rel_tol * max|ref| (bf16 output rounding plus fp32 summation order; 2e-2 default).
    A NaN (an unwritten, poisoned slot) fails.
    """
    if out.numel() == 0:
        return True, 0.0
    got = out.to(ref.device).float()
    if routed is not None:
        routed = routed.to(ref.device)
        got, ref = got[routed], ref[routed]
    max_err = float((got - ref).abs().max())
    if not np.isfinite(max_err):
        return False, float("inf")
    scale = float(ref.abs().max())
    tol = (2e-2 if rel_tol is None else rel_tol) * max(scale, 1e-6)
    return bool(max_err <= tol), max_err
