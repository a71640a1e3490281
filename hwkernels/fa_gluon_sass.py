"""The Gluon attention forward (fa_gluon) compiled for sm_90 on the CPU, and its SASS facts.

    k = compile_offline(overlap=2, stages=3, mode=1)   # triton's CompiledKernel, no GPU needed
    inspect(k)                                          # registers, spills, setmaxnreg, smem, ...
    python -m hwkernels.fa_gluon_sass [--candidates g-s3-o2,...] [--mode 0|1|2] [--instr]
"""

import re
import sys

import triton

from .fa_gluon import gluon_fa_kernel, _layouts

CANDIDATES = {      # name: (stages, overlap, pingpong, persistent)
    "g-s3-o0": (3, 0, 0, True), "g-s3-o1": (3, 1, 0, True), "g-s3-o2": (3, 2, 0, True),
    "g-s2-o2": (2, 2, 0, True), "g-s3-o0-pp": (3, 0, 1, True), "g-s3-o2-pp": (3, 2, 1, True),
    "g-s3-o2-grid": (3, 2, 0, False),
}


def compile_offline(stages=3, overlap=2, pingpong=0, mode=0, instr=False, delta=False,
                    store16=False, rank=2, hl=8, sp=4, order=0, pstride=1, clk=False, stagger_ns=0):
    """gluon_fa_kernel compiled for sm_90 on the CPU (no GPU): Triton's CompiledKernel."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    lq, lkv = _layouts()
    names = gluon_fa_kernel.arg_names
    sig = dict(q_desc=f"tensordesc<bf16[64, 128],{lq!r}>", k_desc=f"tensordesc<bf16[128, 128],{lkv!r}>",
               v_desc=f"tensordesc<bf16[128, 128],{lkv!r}>", out_ptr="*bf16", remote_ptr="*bf16",
               delta_ptr="*i64" if delta else "*bf16", stamps_ptr="*i64" if instr else "*bf16",
               stage_ptr="*bf16", clock_ptr="*i64" if clk else "*bf16",
               qk_scale="fp32", seq="i32", n_tiles="i32")
    const = dict(STAGES=stages, OVERLAP=overlap, PINGPONG=pingpong, MODE=mode, INSTR=instr,
                 CLK=clk, STAGGER_NS=stagger_ns, DELTA=delta, STORE16=store16, RANK=rank, HL=hl, SP=sp, ORDER=order,
                 PSTRIDE=pstride)
    sig.update({n: "constexpr" for n in const})
    attrs = {(names.index(n),): [["tt.divisibility", 16]]
             for n in ("out_ptr", "remote_ptr", "stamps_ptr", "stage_ptr", "seq", "n_tiles")}
    src = GluonASTSource(gluon_fa_kernel, {n: sig[n] for n in names},
                         constexprs={(names.index(n),): v for n, v in const.items()}, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options=dict(num_warps=4, maxnreg=168))


def inspect(kernel) -> dict:
    """SASS facts of a compiled gluon_fa_kernel (offline or the one a GPU ran): fa_sass's, plus
    `mufu_under_pv_wait0` / `rs_hazards_wait0` scanned up to the wait for every wgmma (here P V
    is waited by `.LE gsb0, 0x0` after S's `.LE 0x1`), the partitions' setmaxnreg counts, ptxas's
    registers (the kernel's entry count: maxnreg) and spills, shared memory."""
    from . import fa_sass

    sass = fa_sass.sass_of(kernel.asm["cubin"])
    ins = fa_sass.parse(sass)
    info = fa_sass.inspect_cubin(kernel.asm["cubin"])
    info.update(mufu_under_pv_wait0=fa_sass.mufu_under_pv(ins, wait0=True),
                rs_hazards_wait0=fa_sass.rs_hazards(ins, wait0=True),
                setmaxnreg=sorted({int(x, 16) for x in re.findall(r"USETMAXREG\.\S+\s+(?:UP\d,\s*)?(0x[0-9a-f]+)",
                                                                  sass)}),
                shared_bytes=kernel.metadata.shared, **fa_sass._ptxas_info(kernel.asm["ptx"]))
    return info


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="hwkernels.fa_gluon_sass")
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    ap.add_argument("--mode", type=int, default=0, choices=(0, 1, 2, 3),
                    help="epilogue: 0 FA-only, 1 fused, 2 completion-coupled, 3 fused-paced "
                         "(remote-first, a chunk every 16 KV steps: M = 16K)")
    ap.add_argument("--instr", action="store_true", help="with the per-tile stamps")
    ap.add_argument("--delta", action="store_true", help="owners' buffers at delta[o] (N ranks)")
    ap.add_argument("--store16", action="store_true", help="16 B output stores (launch_gluon_fa's)")
    args = ap.parse_args(argv)
    names = [n for n in args.candidates.split(",") if n]
    bad = [n for n in names if n not in CANDIDATES]
    if bad:
        print(f"fa_gluon_sass: unknown candidate(s) {bad}; known: {sorted(CANDIDATES)}", file=sys.stderr)
        return 2
    for n in names:
        st, ov, pp, _ = CANDIDATES[n]
        try:
            info = inspect(compile_offline(st, ov, pp, args.mode, args.instr, args.delta,
                                                   args.store16, order=int(args.mode == 3),
                                                   pstride=16 if args.mode == 3 else 1))
        except Exception as exc:  # noqa: BLE001 - one line per candidate
            print(f"{n}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            continue
        print(f"{n}: " + " ".join(f"{k}={v}" for k, v in info.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
