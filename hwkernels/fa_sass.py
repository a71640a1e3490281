"""What the compiled FA Q-loop does with its wgmma, read from the SASS (no GPU needed).

    python -m hwkernels.fa_sass [--swp] [--mode 0] [--block-n 64] ...    # compiles for sm_90
    info = inspect_cubin(compiled.asm["cubin"])                          # a kernel run on a GPU

Two facts per kernel, both about the P V wgmma (A operand P in registers, "RS"):
  mufu_under_pv  the most MUFU.EX2 (the softmax's exp2) issued between an RS wgmma and the next
                 WARPGROUP.DEPBAR: > 0 means the softmax runs while P V is on the tensor cores
                 (the software-pipelined Q-loop, fa_qloop._qloop_swp); 0 means they alternate.
  rs_hazards     RS wgmma whose A registers are written before the next WARPGROUP.DEPBAR (a
                 linear scan that follows one backward branch, the loop's back-edge): the wgmma
                 reads them asynchronously, so such a kernel computes garbage (seen: inf).
The steady-state Q-loop (the smallest loop with both HGMMA and MUFU.EX2, `qloop_mix`): its
instruction count, its MUFU.EX2 count (66 per thread per 128 x 128 step; fewer with the exp2
partly on the FMA pipe, fa_exp2) and `mufu_tail`, the instructions between its last MUFU.EX2 and
its first RS wgmma (the softmax's serial tail before P V; shorter with the rescale first).
Also registers, spills and shared memory from ptxas. torch-free; triton only for compiling.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

_INS = re.compile(r"\s*/\*([0-9a-f]{4,6})\*/\s+(.*?)\s*;")
_RS = re.compile(r"HGMMA\S*\s+R\d+,\s+R(\d+),")
_PRED = re.compile(r"^@!?U?P\w+\s+")
_NO_DST = ("ST", "BAR", "BRA", "HGMMA", "WARPGROUP", "SYNCS", "UTMA", "EXIT", "RED", "ATOM",
           "NOP", "WARPSYNC", "BSSY", "BSYNC", "FENCE", "MEMBAR", "CCTL", "ELECT", "VOTEU")


def _tool(name: str) -> str:
    import triton

    path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)
    return path if os.path.exists(path) else (shutil.which(name) or name)


def sass_of(cubin: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([_tool("cuobjdump"), "-sass", f.name], capture_output=True,
                              text=True, check=True).stdout


def parse(sass: str) -> list:
    """[(address, instruction text without predicate-free changes)] in program order."""
    return [(int(m.group(1), 16), m.group(2)) for m in map(_INS.match, sass.splitlines()) if m]


def _dst(text: str) -> set:
    body = _PRED.sub("", text)
    op = body.split()[0]
    if op.startswith(_NO_DST):
        return set()
    m = re.match(r"\S+\s+R(\d+)\b", body)
    if not m:
        return set()
    wide = ".64" in op or op.startswith("IMAD.WIDE")
    return {int(m.group(1)) + k for k in range(2 if wide else 1)}


def _scan(ins: list, i: int, wait0: bool = False):
    """Instructions after ins[i] up to the next WARPGROUP.DEPBAR (wait0: the next one that waits
    for every wgmma, `.LE gsb0, 0x0`; a wait for all but the last leaves P V in flight),
    following one back-edge."""
    where = {a: k for k, (a, _) in enumerate(ins)}
    j, jumped = i + 1, False
    while j < len(ins):
        a, t = ins[j]
        if t.startswith("WARPGROUP.DEPBAR") and (not wait0 or t.endswith(" 0x0")):
            return
        yield t
        b = re.match(r"(?:@!?P\d\s+)?BRA\s+(?:`\()?0x([0-9a-f]+)", t)
        if b and int(b.group(1), 16) < a and not jumped and int(b.group(1), 16) in where:
            j, jumped = where[int(b.group(1), 16)], True
            continue
        j += 1


def rs_hazards(ins: list, wait0: bool = False) -> int:
    n = 0
    for i, (_, t) in enumerate(ins):
        m = _RS.match(_PRED.sub("", t))
        if m:
            regs = {int(m.group(1)) + k for k in range(4)}
            n += any(_dst(u) & regs for u in _scan(ins, i, wait0))
    return n


def mufu_under_pv(ins: list, wait0: bool = False) -> int:
    best = 0
    for i, (_, t) in enumerate(ins):
        if _RS.match(_PRED.sub("", t)):
            best = max(best, sum(u.startswith("MUFU.EX2") for u in _scan(ins, i, wait0)))
    return best


def qloop_mix(ins: list) -> dict:
    """{"loop_instructions", "loop_mufu", "mufu_tail"} of the smallest backward-branch loop that
    holds both an HGMMA and a MUFU.EX2 (empty if there is none)."""
    best = None
    for a, t in ins:
        b = re.match(r"(?:@!?U?P\w+\s+)?BRA\s+(?:`\()?0x([0-9a-f]+)", t)
        if not b or int(b.group(1), 16) >= a:
            continue
        body = [u for x, u in ins if int(b.group(1), 16) <= x <= a]
        ops = [_PRED.sub("", u) for u in body]
        if (any(o.startswith("HGMMA") for o in ops) and any(o.startswith("MUFU.EX2") for o in ops)
                and (best is None or len(ops) < len(best))):
            best = ops
    if best is None:
        return {}
    last = max(i for i, o in enumerate(best) if o.startswith("MUFU.EX2"))
    first_rs = next((i for i, o in enumerate(best) if _RS.match(o) and i > last), len(best))
    return {"loop_instructions": len(best),
            "loop_mufu": sum(o.startswith("MUFU.EX2") for o in best),
            "mufu_tail": first_rs - last - 1}


def inspect_cubin(cubin: bytes) -> dict:
    ins = parse(sass_of(cubin))
    return {"mufu_under_pv": mufu_under_pv(ins), "rs_hazards": rs_hazards(ins),
            "rs_wgmma": sum(bool(_RS.match(_PRED.sub("", t))) for _, t in ins), **qloop_mix(ins)}


def _ptxas_info(ptx: str) -> dict:
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        err = subprocess.run([_tool("ptxas"), "-arch=sm_90a", "-v", src, "-o",
                              os.path.join(d, "k.cubin")], capture_output=True, text=True).stderr
    regs = re.search(r"Used (\d+) registers", err)
    spill = re.search(r"(\d+) bytes spill stores", err)
    return {"regs": int(regs.group(1)) if regs else None,
            "spill_bytes": int(spill.group(1)) if spill else None}


def compile_offline(mode=0, block_m=128, block_n=128, warps=8, stages=3, swp=False, pace=0,
                    d=128, emu=0, early=False, lsum=False, qpf=0, qreg=False, pf=False):
    """fa_fwd_kernel compiled for sm_90 as the launcher specializes it (16-aligned pointers and
    sizes), TMA on; returns Triton's CompiledKernel (asm: ttgir, ptx, cubin)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from .fa_kernels import fa_fwd_kernel

    names = fa_fwd_kernel.arg_names
    const = dict(D=d, BLOCK_M=block_m, BLOCK_N=block_n, MODE=mode, FENCE=2, INSTR=False,
                 UPCAST=False, TMA=True, PACE=pace, CHUNK=block_m // pace if pace else block_m,
                 ORDER=1 if mode == 3 else 0, FLATTEN=False, WS=False, BRANCH=True,
                 DELTA=False, SWP=swp, EMU=emu, EARLY=early, LSUM=lsum,
                 QPF=qpf, QREG=qreg, PF=pf)
    sig = {n: "*bf16" for n in ("q_ptr", "k_ptr", "v_ptr", "out_ptr", "remote_ptr", "stage_ptr")}
    sig.update(stamps_ptr="*i64", flags_ptr="*i32", delta_ptr="*i64", qk_scale="fp32")
    sig.update({n: "i32" for n in ("n_tiles", "programs", "rank", "hl", "seq", "sp",
                                   "slice_elems", "pace_stride")})
    sig.update({n: "constexpr" for n in const})
    aligned = [n for n in names if n.endswith("_ptr")] + ["n_tiles", "seq", "slice_elems"]
    src = ASTSource(fa_fwd_kernel, {n: sig[n] for n in names},
                    constexprs={(names.index(n),): v for n, v in const.items()},
                    attrs={(names.index(n),): [["tt.divisibility", 16]] for n in aligned})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options=dict(num_warps=warps, num_stages=stages))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="hwkernels.fa_sass")
    ap.add_argument("--mode", type=int, default=0, choices=(0, 1, 2, 3))
    ap.add_argument("--block-m", type=int, default=128)
    ap.add_argument("--block-n", type=int, default=128)
    ap.add_argument("--num-warps", type=int, default=8)
    ap.add_argument("--num-stages", type=int, default=3)
    ap.add_argument("--pace", type=int, default=8, help="MODE 3 row chunks")
    ap.add_argument("--swp", action="store_true")
    ap.add_argument("--emu", type=int, default=0, help="softmax exp2 elements of 8 on the FMA pipe")
    ap.add_argument("--early", action="store_true", help="softmax: alpha and the rescale first")
    ap.add_argument("--lsum", action="store_true", help="softmax row sums as P @ ones (wgmma)")
    ap.add_argument("--qpf", type=int, default=0, choices=(0, 1, 2),
                    help="next tile's Q (2: and first K, V) prefetched into L2")
    ap.add_argument("--qreg", action="store_true", help="next tile's Q loaded during the epilogue")
    ap.add_argument("--pf", action="store_true",
                    help="MODE 3: paced chunks read from the stage one chunk step early")
    ap.add_argument("--sass-out", default="", help="also write the SASS here")
    args = ap.parse_args(argv)
    try:
        k = compile_offline(args.mode, args.block_m, args.block_n, args.num_warps,
                            args.num_stages, args.swp, args.pace if args.mode == 3 else 0,
                            emu=args.emu, early=args.early, lsum=args.lsum,
                            qpf=args.qpf, qreg=args.qreg, pf=args.pf)
    except Exception as exc:  # noqa: BLE001 - one line, exit 2
        print(f"fa_sass: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", file=sys.stderr)
        return 2
    info = {**inspect_cubin(k.asm["cubin"]), **_ptxas_info(k.asm["ptx"]),
            "shared_bytes": k.metadata.shared}
    if args.sass_out:
        with open(args.sass_out, "w") as f:
            f.write(sass_of(k.asm["cubin"]))
    print(" ".join(f"{key}={val}" for key, val in info.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
