"""What the fused MoE runner (hwkernels.moe_bench) writes to and prints: the Combine destinations, the kernel
settings and fused mainloops its records carry, the table."""


def one_gpu_session():
    """What a one-GPU MoE probe's records name: (device, SMs, commit, dirty, platform). The platform is
    the machine as every host-link record names it (a local-Combine run says so in its params)."""
    import torch

    from . import records
    from .platform_info import platform, smi_sm_clock_mhz

    device = torch.device("cuda", 0)
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    commit, dirty = records.run_commit()
    return device, sms, commit, dirty, platform(1, smi_sm_clock_mhz(), 0, 1, destination="host")


def host_out(shape, device):
    """A [T, topk, H] bf16 CUDA view of mapped pinned host memory, its CPU view, the buffer."""
    import torch

    from .destination import host_buffer

    buf = host_buffer(shape.tokens * shape.topk * shape.hidden * 2, device)
    view = lambda t: t.view(torch.bfloat16).view(shape.tokens, shape.topk, shape.hidden)  # noqa
    return view(buf.cuda), view(buf.cpu), buf


def local_out(shape, device):
    """The local-Combine control's destination: device memory of the same layout."""
    import torch

    out = torch.empty(shape.tokens, shape.topk, shape.hidden, dtype=torch.bfloat16,
                      device=device)
    return out, None, None


def print_table(rows):
    print(f"{'kind':8} {'point':34} {'sched/ratio':>12} {'ok':>3} {'kernel_us':>10} "
          f"{'span p50/p90':>14} {'wait p50':>9} {'signal p50/p90':>15}")
    for kind, name, sch, ok, st in rows:
        if kind == "gemm":
            ratio = "-" if sch is None else f"{sch:.3f}"
            tf = "-" if st is None else f"{st:.0f} TF"
            print(f"{kind:8} {name:34} {ratio:>12} {'yes' if ok else 'NO':>3} {tf:>10}")
            continue
        if not st:
            print(f"{kind:8} {name:34} {sch:>12} {'yes' if ok else 'NO':>3}")
            continue
        sp, sg = st["span_us"], st["signal_us"]
        print(f"{kind:8} {name:34} {sch:>12} {'yes' if ok else 'NO':>3} "
              f"{st['kernel_us']['median']:10.1f} "
              f"{sp['median']:6.1f}/{sp['p90']:6.1f} {st.get('wait_us', sp)['median']:9.1f} "
              f"{sg['median']:7.1f}/{sg['p90']:6.1f}")


def kernel_params(c) -> dict:
    """A moe.KernelConfig's settings as the records' params carry them."""
    return {"block_k": c.block_k, "block_k2": c.k2, "num_warps": c.num_warps,
            "num_stages": c.num_stages, "tma": c.tma, "acc_k1": c.acc_k1,
            "acc_k2": c.acc_k2, "num_stages2": c.stages2, "poll": c.poll,
            "host_desc": c.host_desc} | ({"combine_hint": c.combine_hint} if c.combine_hint else {})


def fused_mainloop_records(b, cfg, params, stats, ok):
    """Kind "mainloop" records (source "fused-local") from a local-Combine run's stamps (``b``: the runner's
    Bench, which writes them)."""
    from .moe_stamps import FUSED_RECORD_STATS

    s = cfg.shape
    for kind, pick in FUSED_RECORD_STATS.items():
        p = {"precision": s.precision, "block_m": s.block_m,
             "block_n": s.block_n1 if kind == "l1" else s.block_n2,
             "k_dim": s.hidden if kind == "l1" else s.intermediate, "kind": kind,
             "hidden": s.hidden, "intermediate": s.intermediate, "source": "fused-local",
             "config": cfg.name, "schedule": params["schedule"]} | b.cfg_params(s.precision)
        st = None if not ok or stats is None else {k: stats[v] for k, v in pick.items()}
        b.record("mainloop", p, st, {"ok": bool(ok and st is not None)})
