"""Where an fp8 fused-MoE check failure comes from (one GPU, local Combine, no timing).

    python -m hwkernels.moe_diag --configs moe1-a,moe1-b --acc 0/0,128/128,0/128

For each config and each (acc_k1/acc_k2) setting, one checked run of the fused kernel into
device memory, then:
  err_over_tol  the end-to-end check's max error / its tolerance (> 1 fails)
  slope         least-squares slope of out against ref (1 - slope: a bias toward zero, the
                signature of sm_90's unpromoted fp8 accumulation)
  act_flip      fraction of the kernel's e4m3 activations that differ from the reference's
                (one e4m3 step each: Linear-1's error, amplified by the requantization)
  act_rel       max |act_kernel - act_ref| / max |act_ref| (dequantized)
  l2_only       max error / tolerance of the kernel's output against Linear-2 recomputed in
                fp32 from the kernel's own activations (Linear-2's own error)
"""

import argparse
import sys

import numpy as np

from . import moe, moe_reference
from .moe_catalog import load_configs


def _ref_act(data, lay):
    """The reference's e4m3 activations, [R, I] (codes as float32 in units of sa)."""
    import torch

    sc = data.scales.float()
    e_local = data.w1.shape[0]
    rows = np.asarray(lay.expert_rows)
    tok = torch.as_tensor(np.asarray(lay.row_token, dtype=np.int64)).to(data.x.device)
    out = torch.zeros(len(lay.row_token), data.w1.shape[1] // 2, device=data.x.device)
    for e in range(e_local):
        r0, r1 = int(rows[e]), int(rows[e + 1])
        if r1 > r0:
            x = data.x[tok[r0:r1]].float() * sc[0]
            h = x @ (data.w1[e].t().float() * sc[2 + e])
            inter = h.shape[1] // 2
            act = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
            fp8_max = moe_reference.FP8_MAX
            q = (act / sc[1]).clamp(-fp8_max, fp8_max).to(torch.float8_e4m3fn)
            out[r0:r1] = q.float()
    return out


def _l2_from(data, lay, act_codes, topk):
    """[T, topk, H] fp32: Linear-2 and Combine from the given e4m3 activation codes."""
    import torch

    sc = data.scales.float()
    e_local = data.w1.shape[0]
    tokens, hidden = data.x.shape
    out = torch.zeros(tokens, topk, hidden, device=data.x.device)
    rows = np.asarray(lay.expert_rows)
    dev = data.x.device
    tok = torch.as_tensor(np.asarray(lay.row_token, dtype=np.int64)).to(dev)
    slot = torch.as_tensor(np.asarray(lay.row_slot, dtype=np.int64)).to(dev)
    w = torch.as_tensor(np.asarray(lay.row_weight, dtype=np.float32)).to(dev)
    for e in range(e_local):
        r0, r1 = int(rows[e]), int(rows[e + 1])
        if r1 > r0:
            w2 = data.w2[e].t().float() * sc[2 + e_local + e]
            out[tok[r0:r1], slot[r0:r1]] = (act_codes[r0:r1] * sc[1]) @ w2 * w[r0:r1, None]
    return out


def diagnose(cfg, acc_pairs, sms: int, device) -> list[dict]:
    import torch

    from xsim.moe.layout import expert_layout
    from xsim.moe.routing import route
    from xsim.moe.schedule import schedule_table

    from .moe_bench import SETTINGS

    s = cfg.shape
    data = moe_reference.make_inputs(s, cfg.seed, device)
    lay = expert_layout(s, route(s, cfg.routing, cfg.skew, cfg.seed))
    ref = moe_reference.reference(data, lay, s.topk)
    tol = 2e-2 * float(ref.abs().max())
    table = schedule_table(s, lay, "wave", n_streams=sms)
    base = SETTINGS[s.precision]
    ref_codes = _ref_act(data, lay) if s.precision == "fp8" else None
    rows = []
    for a1, a2 in acc_pairs:
        from dataclasses import replace

        kc = replace(base, acc_k1=a1, acc_k2=a2)
        out = torch.full((s.tokens, s.topk, s.hidden), float("nan"), dtype=torch.bfloat16,
                         device=device)
        fused = moe.FusedMoE(s, lay, table, data, out, kc)
        fused.launch()
        fused.finish()
        got = out.float()
        r = {"config": cfg.name, "acc_k1": a1, "acc_k2": a2,
             "err_over_tol": float((got - ref).abs().max()) / tol,
             "slope": float((got * ref).sum() / (ref * ref).sum())}
        if ref_codes is not None:
            codes = fused.act.float()
            r["act_flip"] = float((codes != ref_codes).float().mean())
            r["act_rel"] = float((codes - ref_codes).abs().max() / ref_codes.abs().max())
            own = _l2_from(data, lay, codes, s.topk)
            r["l2_only"] = float((got - own).abs().max()) / (2e-2 * float(own.abs().max()))
        rows.append(r)
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in r.items()), flush=True)
    return rows


def main(argv=None):
    import torch

    ap = argparse.ArgumentParser(prog="hwkernels.moe_diag", description=__doc__.splitlines()[0])
    ap.add_argument("--configs", required=True)
    ap.add_argument("--acc", default="0/0,128/128", help="acc_k1/acc_k2 pairs")
    args = ap.parse_args(argv)
    pairs = [tuple(int(v) for v in p.split("/")) for p in args.acc.split(",") if p]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for cfg in load_configs(args.configs):
        diagnose(cfg, pairs, sms, torch.device("cuda", 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
