"""Predictions for FA + Ulysses A2A on N GPUs (issues 13, 14), committed before anyone measures them.

For each (platform, SP = N): the closed form (G*, M_ub*, E_issue, E_drain, E_cc) and the DES
(the ``fa_a2a`` builder, fused and cc) over M = 1K .. 64K, peer destination (each rank stores
into the N - 1 other owners' buffers over NVLink). The Q-loop gap is the one fitted on our
one-GPU FA-only records (the same Triton kernel on the same H200), or, for the paper's
platform, the paper's FA4 sigma = 0.79 us per KV tile (b_n = 128) with its fixed part dropped.
T_FA is the modeled waves x G_Qloop; what a later measurement tests is E_res(M) = T_fused - T_FA,
E_cc(M), the ratios to T_FA and the threshold M_ub*, not the absolute compute time.

    PYTHONPATH=. python benchmarks/fa_a2a_predictions.py [--records FILE ...]
writes benchmarks/results/fa_a2a_predictions_<platform>_sp<N>.json (atomically).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from xsim.attention.predict import predict  # noqa: E402
from xsim.attention.qloop import QLoop, fit_qloop  # noqa: E402
from xsim.attention.shape import AttentionShape  # noqa: E402
from xsim.builders import fa_a2a as builder  # noqa: E402
from xsim.des import simulate  # noqa: E402
from xsim.params import resolve  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402

SEQ_LENS = (1024, 2048, 4096, 8192, 16384, 32768, 49152, 65536)
PAPER_QLOOP = QLoop(0.79, 0.0, 128)   # Sec. 4.3: sigma ~ 0.79 us per KV tile, fixed part dropped
CASES = (("h200-nvlink-x2", 2, "ours"), ("h200-nvlink-x2", 8, "ours"), ("paper-8gpu", 8, "paper"))
SHAPE = dict(batch=1, heads=32, head_dim=128, block_m=128, block_n=128)


def our_qloop(paths) -> tuple[QLoop, str]:
    """The Q-loop fitted once on the FA-only records of our d = 128 series (one GPU, host)."""
    from calibration.records import load_records, parse_texts, shipped_record_files
    from xsim.report.fa_a2a_points import collect

    if paths:
        rs = load_records(paths)
    else:
        files = [e for e in shipped_record_files() if e.name.endswith("-fa-a2a.jsonl")]
        if not files:
            raise SystemExit("no fa-a2a records shipped: give --records")
        rs = parse_texts([(e.name, e.read_bytes()) for e in files])
    notes: list[str] = []
    series = collect(rs, notes)
    key = max((k for k in series if k[0] == 128 and k[2] == SHAPE["block_n"]), key=lambda k: len(series[k]))
    pts = [p for p in series[key].values() if p.qloop_us == p.qloop_us]
    fit = fit_qloop([p.seq_len for p in pts], [p.qloop_us for p in pts], SHAPE["block_n"])
    return fit, f"fitted on {len(pts)} FA-only records ({', '.join(sorted({f for f, _ in rs.files}))}), series {key}"


def _des(shape: AttentionShape, qloop: QLoop, platform, variant: str) -> float:
    params = resolve(builder.PARAMS, {
        "variant": variant, "seq_len": shape.seq_len, "batch": shape.batch, "heads": shape.heads, "sp": shape.sp,
        "head_dim": shape.head_dim, "block_m": shape.block_m, "block_n": shape.block_n, "producers": shape.producers,
        "destination": "peer", "sigma_us_per_kv_tile": qloop.sigma_us_per_kv_tile,
        "qloop_fixed_us": qloop.fixed_us,
        "cc_fence": "link"}, "prediction")   # the fence the committed predictions were made with (the default since: fifo+gate)
    return builder.summarize(simulate(builder.build(params, platform), engine="fast", trace=False), params)["e_res_us"]


def case(platform_name: str, sp: int, qloop: QLoop, source: str) -> dict:
    platform = resolve_platform(platform_name)
    points = []
    for m in SEQ_LENS:
        if (m // sp) % SHAPE["block_m"] or m % sp:
            continue
        shape = AttentionShape(seq_len=m, sp=sp, producers=platform.sms, **SHAPE)
        cf = predict(shape, qloop, platform, "peer")
        e_res_des, e_cc_des = _des(shape, qloop, platform, "fused"), _des(shape, qloop, platform, "cc")
        points.append({"seq_len": m, "waves": cf.waves, "g_qloop_us": cf.g_qloop_us, "t_fa_model_us": cf.t_fa_model_us,
                       "e_issue_us": cf.e_issue_us, "e_drain_us": cf.e_drain_us, "e_res_cf_us": cf.e_res_us,
                       "e_cc_cf_us": cf.e_cc_us, "e_res_des_us": e_res_des, "e_cc_des_us": e_cc_des,
                       "fused_over_fa_cf": 1 + cf.e_res_us / cf.t_fa_model_us,
                       "fused_over_fa_des": 1 + e_res_des / cf.t_fa_model_us,
                       "cc_over_fa_cf": 1 + cf.e_cc_us / cf.t_fa_model_us})
    head = predict(AttentionShape(seq_len=SEQ_LENS[-1], sp=sp, producers=platform.sms, **SHAPE), qloop, platform,
                   "peer")
    return {"platform": platform_name, "platform_status": platform.status, "sp": sp, "destination": "peer",
            "drain_rate_gbps": head.drain_rate_gbps, "t_iss0_us": head.t_iss0_us, "capacity_bytes": head.capacity_bytes,
            "g_star_us": head.g_star_us, "m_ub_star_tokens": head.m_ub_star_tokens,
            "shape": {**SHAPE, "producers": platform.sms}, "qloop": {**qloop.to_dict(), "source": source},
            "points": points, "made_by": "benchmarks/fa_a2a_predictions.py", "commit": commit_note()}


def _write_atomic(path: Path, document: dict) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(document, indent=2) + "\n")
    os.replace(tmp, path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", nargs="+", help="fa-a2a records to fit our Q-loop on (default: the shipped ones)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    ours, source = our_qloop(args.records)
    for platform_name, sp, which in CASES:
        qloop, src = (ours, source) if which == "ours" else (PAPER_QLOOP, "the paper's FA4 sigma (Sec. 4.3)")
        doc = case(platform_name, sp, qloop, src)
        path = args.out / f"fa_a2a_predictions_{platform_name}_sp{sp}.json"
        _write_atomic(path, doc)
        print(f"{path}: G* {doc['g_star_us']:.3g} us, M_ub* {doc['m_ub_star_tokens']:.0f} tokens, "
              f"{len(doc['points'])} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
