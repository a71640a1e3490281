"""Why does FA-only run at a lower SM clock than fused? Steady-state clock, power and clock-event reasons (GPU only).

    python -m hwkernels.fa_power --json OUT.json [--seq-len 32768] [--variants fa-only,fused]
           [--block-s 1.0] [--rounds 3] [fa_bench's kernel options: --mainloop gluon --stagger-us design]

Above 16K the headline runs clock FA-only 5-10 % lower than fused (docs/fa-a2a.md, runs 12 and 14), which
the reports call DVFS. This separates a kernel's own steady state from the order of the sweep: each
variant's CUDA graph (fa_bench's ring, checked on the receiver side before and after) is replayed back to
back for ``block_s`` seconds, the variants alternating block by block for ``rounds`` rounds, while
``nvidia-smi`` samples the SM clock, the board power and the active clock-event reasons every ``smi_ms``
(read-only queries; nothing is set). Per block: the kernel time (CUDA events over the whole block), the
kernels' own clock (CLK: cycles over nanoseconds), and the medians of the samples after the first quarter
of the block (the controller's settling). The table printed last has one row per variant and round.
"""

import argparse
import json
import subprocess
import sys
import threading
import time

import numpy as np

from xsim.fileio import atomic_write

REASONS = {0x1: "idle", 0x2: "app clocks", 0x4: "sw power cap", 0x8: "hw slowdown", 0x10: "sync boost",
           0x20: "sw thermal", 0x40: "hw thermal", 0x80: "hw power brake", 0x100: "display clock"}
FIELD_SETS = (("clocks.sm", "power.draw.instant", "power.draw.average", "clocks_event_reasons.active",
               "temperature.gpu"),
              ("clocks.sm", "power.draw", "power.draw", "clocks_throttle_reasons.active", "temperature.gpu"))


def reasons(mask: int) -> list[str]:
    """The names of the clock-event reason bits of an nvidia-smi bitmask."""
    return [name for bit, name in REASONS.items() if mask & bit]


def _number(text: str) -> float:
    text = text.strip()
    try:
        return float(int(text, 16)) if text.startswith("0x") else float(text)
    except ValueError:
        return float("nan")


class Sampler:
    """nvidia-smi in a loop in the background: (host time, clock MHz, power W, average power W, reasons, C)."""

    def __init__(self, ms: int):
        self.rows, self.fields = [], None
        for fields in FIELD_SETS:
            probe = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                                   capture_output=True, text=True)
            if probe.returncode == 0 and "not a valid field" not in probe.stdout.lower():
                self.fields = fields
                break
        if self.fields is None:
            raise RuntimeError("nvidia-smi answers none of the queried field sets")
        self.proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={','.join(self.fields)}",
                                      "--format=csv,noheader,nounits", f"--loop-ms={ms}"],
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            parts = line.split(",")
            if len(parts) == len(self.fields):
                self.rows.append((time.time(), *(_number(p) for p in parts)))

    def window(self, t0: float, t1: float) -> dict:
        """Medians of the samples in [t0, t1] and the reasons seen in any of them."""
        got = np.array([r for r in self.rows if t0 <= r[0] <= t1]) if self.rows else np.zeros((0, 6))
        if len(got) == 0:
            return {"samples": 0}
        mask = 0
        for m in got[:, 4]:
            mask |= int(m) if np.isfinite(m) else 0
        return {"samples": int(len(got)), "smi_clock_mhz": float(np.median(got[:, 1])),
                "power_w": float(np.median(got[:, 2])), "power_avg_w": float(np.median(got[:, 3])),
                "reasons": reasons(mask), "reason_mask": hex(mask), "temperature_c": float(np.median(got[:, 5]))}

    def stop(self):
        self.proc.terminate()


def _checked(case, variant: str, ring) -> tuple[bool, float]:
    import torch

    case.poison(variant)
    ring()
    torch.cuda.synchronize()
    return case.check(variant)


def block(case, ring, graph, seconds: float, est_us: float) -> dict:
    """``graph`` replayed back to back for about ``seconds``: per-launch us (events) and CLK's clock."""
    import torch

    n = max(1, int(seconds * 1e6 // max(est_us, 1.0)))
    case.clock.zero_()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.time()
    start.record()
    for _ in range(n):
        graph.replay()
    end.record()
    end.synchronize()
    t1 = time.time()
    return {"replays": n, "kernel_us": start.elapsed_time(end) * 1e3 / (n * case.slots),
            "run_clock_mhz": case.run_clock_mhz(), "t0": t0, "t1": t1}


def main(argv=None) -> int:
    import torch

    from . import fa_bench, fa_bench_args
    from .fa_stagger import design_config, design_platform
    from .fa_variants import Case
    from .harness import capture_graph, graph_replay_us
    from .records import run_commit

    ap = argparse.ArgumentParser(prog="hwkernels.fa_power", description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True)
    ap.add_argument("--seq-len", type=int, default=32768)
    ap.add_argument("--block-s", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--smi-ms", type=int, default=20)
    own, rest = ap.parse_known_args(argv)
    args = fa_bench_args.parse_args(["--out", "-", "--seq-lens", str(own.seq_len), *rest])
    variants = [v for v in (args.variants or "fa-only,fused").split(",") if v]
    cfg = fa_bench_args.kernel_config(args)
    shape = fa_bench_args.shapes(args)[0]
    programs = args.programs or torch.cuda.get_device_properties(0).multi_processor_count
    rule = {}
    if args.stagger_us == "design":
        design_platform(args.target, args.profile)
        cfg, rule = design_config(cfg, args.target, args.profile, programs, args.block_m, args.head_dim, args.sp)
    host = fa_bench._host_view(fa_bench.host_bytes_for([shape]), torch.device("cuda", 0))
    case = Case(shape, cfg, host.cuda, fa_bench.slots_for(shape), programs)
    graphs = {}
    for v in variants:
        ring = case.ring(v)
        ok, err = _checked(case, v, ring)
        if not ok:
            print(f"fa_power: {v} failed its check (max err {err:.3g}); nothing timed", file=sys.stderr)
            return 1
        graph = capture_graph(ring)
        graphs[v] = (ring, graph, graph_replay_us(ring, 1, graph=graph))
    smi = Sampler(own.smi_ms)
    time.sleep(1.0)
    idle = smi.window(time.time() - 0.8, time.time())
    rows = []
    for r in range(own.rounds):
        for v in variants:
            ring, graph, est = graphs[v]
            b = block(case, ring, graph, own.block_s, est)
            settle = b["t0"] + 0.25 * (b["t1"] - b["t0"])
            rows.append({"round": r, "variant": v, **b, **smi.window(settle, b["t1"])})
    time.sleep(0.2)
    smi.stop()
    after = {v: _checked(case, v, graphs[v][0]) for v in variants}
    doc = {"commit": run_commit()[0], "device": torch.cuda.get_device_name(), "seq_len": shape.seq_len,
           "stagger_us": cfg.stagger_us, **rule, "smi_fields": list(smi.fields), "idle": idle, "rows": rows,
           "checks_after": {v: {"ok": bool(ok), "max_err": float(e)} for v, (ok, e) in after.items()}}
    atomic_write(own.json, json.dumps(doc, indent=1))
    print(f"idle: {idle}")
    print("| round | variant | kernel us | CLK MHz | smi MHz | power W | avg W | temp C | reasons | samples |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for x in rows:
        print(f"| {x['round']} | {x['variant']} | {x['kernel_us']:.1f} | {x['run_clock_mhz'] or float('nan'):.0f} | "
              f"{x.get('smi_clock_mhz', float('nan')):.0f} | {x.get('power_w', float('nan')):.0f} | "
              f"{x.get('power_avg_w', float('nan')):.0f} | {x.get('temperature_c', float('nan')):.0f} | "
              f"{', '.join(x.get('reasons', [])) or '-'} | {x['samples']} |")
    print(f"checks after: {doc['checks_after']}")
    return 0 if all(ok for ok, _ in after.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
