"""TEST DATA ONLY: generated fa-a2a records in the FA_CONTRACT schema (never shipped).

A made-up "truth" stands in for the GPU: per-tile Q-loop times from a known sigma and fixed
part, an FA-only kernel time of waves x Q-loop plus a launch floor, fused and cc times from
the fa_a2a DES of a given platform (plus ``extra_issue_us`` per remote tile that no model
knows), serial = FA-only + our A2A store kernel (remote bytes / R), cuDNN at ``cudnn_ratio``
of our time. Multiplicative noise ``noise`` per trial; seeded.
"""

from __future__ import annotations

import numpy as np

from hwkernels.records import make_record
from xsim.attention.shape import AttentionShape
from xsim.builders import fa_a2a
from xsim.des import simulate
from xsim.params import resolve
from xsim.platform import CapacityModel, IssueModel, Platform
from xsim.stats import Stats
from xsim.units import drain_time_us

PLATFORM = {"gpu": "TEST-GPU (generated)", "gpu_count": 1, "sms": 16, "driver": "test", "sm_clock_mhz": 1980,
            "destination": "host", "link": "test link"}


def _stats(rng, value_us: float, noise: float, n: int = 20) -> dict:
    return Stats.of(value_us * (1.0 + noise * rng.standard_normal(n))).to_dict()


def _des_us(params: dict, platform) -> float:
    result = simulate(fa_a2a.build(params, platform), engine="fast", trace=False)
    return fa_a2a.summarize(result, params)["kernel_us"]["mean"]


def generate(platform, seq_lens, *, heads=16, batch=1, sp=4, head_dim=128, producers=16, block_m=128, block_n=128,
             sigma_us=0.5, fixed_us=3.0, launch_us=4.0, extra_issue_us=0.0, cudnn_ratio=0.9, noise=0.002,
             seed=0, kinds=None, clock_mhz=None) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for m in seq_lens:
        shape = AttentionShape(seq_len=m, batch=batch, heads=heads, sp=sp, head_dim=head_dim, block_m=block_m,
                               block_n=block_n, producers=producers)
        gap = fixed_us + sigma_us * shape.kv_tiles
        base = dict(seq_len=m, batch=batch, heads=heads, sp=sp, head_dim=head_dim, block_m=block_m,
                    block_n=block_n, producers=producers, destination="host")
        des = {}
        for variant in ("fused", "cc"):
            params = resolve(fa_a2a.PARAMS, {**base, "variant": variant, "sigma_us_per_kv_tile": sigma_us,
                                             "qloop_fixed_us": fixed_us, "qloop_cv": noise}, "test")   # as the Q-loop stats spread
            des[variant] = _des_us(params, platform) - shape.waves * gap
        t_fa = shape.waves * gap + launch_us
        remote_waves = int((shape.wave_bytes() > 0).sum())
        a2a = drain_time_us(float(shape.remote_bytes.sum()), platform.drain_rate_gbps) + launch_us
        times = {"fa-only": t_fa, "sdpa-cudnn": t_fa * cudnn_ratio, "a2a-store": a2a, "a2a-ce": a2a * 1.1,
                 "serial": t_fa + a2a, "fused": t_fa + des["fused"] + remote_waves * extra_issue_us,
                 "cc": t_fa + des["cc"] + remote_waves * extra_issue_us}
        params = {**base, "heads_local": shape.heads_local, "dtype": "bf16", "tiles_per_cta": shape.waves}
        for kind, t in times.items():
            if kinds is not None and kind not in kinds:
                continue
            stats = {"kernel_us": _stats(rng, t, noise)}
            if clock_mhz and kind in clock_mhz:   # the timed runs' own SM clock (CLK), as the Gluon kernel's
                stats["run_clock_mhz"] = _stats(rng, clock_mhz[kind], 0.0)
            if kind == "fa-only":
                stats["qloop_us"] = _stats(rng, gap, noise, n=shape.n_tiles)
            if kind in ("fused", "cc"):
                stats["issue_span_us"] = _stats(rng, platform.t_iss0_us(shape.programs, shape.tile_bytes)
                                                + extra_issue_us, noise, n=shape.n_tiles)
            out.append(make_record("fa-a2a", kind, params, stats, {"ok": True, "max_abs_err": 1e-3}, PLATFORM,
                                   "test", False))
    return out


def write(records: list[dict], path) -> None:
    import json

    with open(path, "w") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")


def toy_host() -> Platform:
    """The small host-link platform the report tests generate records for (16 SMs, 20 GB/s)."""
    return Platform(name="toy-host", drain_rate_gbps=20.0, issue=IssueModel(t_fixed_us=0.5),
                    capacity=CapacityModel(max_bytes=16 * 32768), sms=16, gpus=1)


def flat_stats(v: float) -> dict:
    """One statistic whose every field is ``v`` (a record's stats entry of a single value)."""
    return {"mean": v, "median": v, "p10": v, "p90": v, "min": v, "max": v, "n": 5}


def duty_record(m, kind, units, u, f, smi) -> dict:
    """One duty-cycle record (experiment "power", hwkernels.fa_duty) of busy fraction ``u``, CLK clock ``f``
    and nvidia-smi clock ``smi``."""
    stats = {"busy_fraction": flat_stats(u), "run_clock_mhz": flat_stats(f), "smi_clock_mhz": flat_stats(smi), "period_us": flat_stats(1.0)}
    return make_record("power", "duty", {"seq_len": m, "gap_kind": kind, "gap_units": units}, stats, {"ok": True},
                       PLATFORM, "test", False)


def recordset(recs):
    """Records as the shipped power file would parse."""
    import json

    from calibration.records import parse_texts

    return parse_texts([("h200-pcie-host-power.jsonl", "".join(json.dumps(r) + "\n" for r in recs).encode())])


def law_records(beta=0.4, ceiling=1700.0, f0=1500.0, u0=0.95, ms=(2048, 8192), top=1980.0) -> list[dict]:
    """Duty records drawn from a known clock law: capped below the ceiling (nvidia-smi under ``top``), at the
    ceiling above it (at ``top``); beside them the idle control, which no fit reads."""
    recs = []
    for m in ms:
        recs.append(duty_record(m, "none", 0, u0, f0, 1650.0))
        for units, u in ((1, 0.85), (2, 0.75), (4, 0.5), (8, 0.3)):
            f = f0 * (u0 / u) ** beta
            capped = f < ceiling
            recs.append(duty_record(m, "store", units, u, f if capped else ceiling, 1800.0 if capped else top))
            recs.append(duty_record(m, "idle", units, u, 1.1 * ceiling, top))
    return recs
