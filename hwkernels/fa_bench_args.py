"""fa_bench's command line: the suites, the arguments, the shapes and kernel options they ask for.

    args = parse_args(argv); cases = shapes(args); cfg = kernel_config(args)
"""

import argparse

from . import fa
from .fa import FAShape
from .fa_stagger import stagger_number
from .fa_variants import MAINLOOPS, KernelConfig

DESCRIPTION = "Runner: FlashAttention fused with the Ulysses post-attention A2A, one record per (variant, M)."
SUITES = {"full": (1024, 4096, 16384, 65536, 2048, 8192, 32768, 3072, 6144, 12288),
          "quick": (1024, 4096, 16384)}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="hwkernels.fa_bench", description=DESCRIPTION)
    ap.add_argument("--out", required=True, help="records file (JSONL), appended to")
    ap.add_argument("--target", choices=("host", "peer"), default="host")
    ap.add_argument("--suite", choices=sorted(SUITES), default="full")
    ap.add_argument("--seq-lens", default="", help="comma-separated M values (default: suite)")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--sp", type=int, default=4, help="Ulysses SP N (virtual owners on one GPU)")
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--tokens", type=int, default=4096,
                    help="batch = max(1, tokens // M) so short sequences still fill the GPU")
    ap.add_argument("--block-m", type=int, default=128)
    ap.add_argument("--block-n", type=int, default=128)
    ap.add_argument("--num-warps", type=int, default=8)
    ap.add_argument("--num-stages", type=int, default=3)
    ap.add_argument("--tma", action="store_true", help="K/V through tensor descriptors")
    ap.add_argument("--flatten", action="store_true", help="persistent loop tl.range(flatten=True)")
    ap.add_argument("--ws", action="store_true", help="persistent loop tl.range(warp_specialize=True)")
    ap.add_argument("--swp", action="store_true",
                    help="Q-loop software-pipelined by one KV step (P V in flight during the softmax)")
    ap.add_argument("--emu", type=int, default=1, choices=fa.EMUS,
                    help="softmax exp2: this many of every 8 elements on the FMA pipe (fa_exp2; "
                         "default 1, the shipped kernel; 0: all on MUFU, the kernel before it)")
    ap.add_argument("--early", action="store_true", help="softmax: alpha and the rescale first")
    ap.add_argument("--lsum", action="store_true",
                    help="softmax row sums as P @ ones on the tensor cores (fa_qloop LSUM)")
    ap.add_argument("--qpf", type=int, default=0, choices=fa.QPFS,
                    help="every variant: the next tile's Q (2: and its first K, V) prefetched "
                         "into L2 at each tile start")
    ap.add_argument("--qreg", type=int, default=1, choices=(0, 1),
                    help="every variant: the next tile's Q loaded during each tile's epilogue "
                         "(default 1, the shipped kernel; 0: the kernel before it)")
    ap.add_argument("--split", action="store_true",
                    help="fa-only and serial: the last partial wave split along KV (fa_split)")
    ap.add_argument("--pace", type=int, default=8,
                    help="fused-paced: row chunks per tile, stored during the next Q-loop")
    ap.add_argument("--pace-consecutive", action="store_true",
                    help="fused-paced: one chunk per KV step (default: spread over the Q-loop)")
    ap.add_argument("--pace-order", choices=("remote-first", "default"), default="remote-first",
                    help="fused-paced tile order (remote-first: the rank's own tiles last)")
    ap.add_argument("--pace-masked", action="store_true",
                    help="fused-paced: chunk code masked on every KV step (default: uniform if)")
    ap.add_argument("--pace-pf", type=int, default=0, choices=(0, 1),
                    help="fused-paced: each chunk read from the stage one chunk step before its "
                         "stores (fa_qloop._pace_step_pf; default 0, the kernel of the shipped "
                         "records; 1 measured faster in two paired A/Bs, docs/fa-a2a.md run 6)")
    ap.add_argument("--paired", action="store_true",
                    help="per M, every variant timed once per trial in a rotating order; records "
                         "add the median per-trial difference to FA-only (fa_paired)")
    ap.add_argument("--config", default="",
                    help="JSON file whose 'best' is [block_m, block_n, num_warps, num_stages, "
                         "tma] (fa_tune's output); overrides those five options")
    ap.add_argument("--programs", type=int, default=0, help="persistent CTAs (0: SM count)")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--steady-s", type=float, default=0.0,
                    help="before every trial run the variant's rings back to back for this many seconds, "
                         "untimed, so each timed replay runs in the power-capped steady state (records: "
                         "params.timing 'steady'; 0: a short launch after the checks' idle gap, 'burst')")
    ap.add_argument("--mainloop", choices=MAINLOOPS, default="triton",
                    help="the attention kernel: fa_kernels' (triton) or fa_gluon's warp-specialized "
                         "one (gluon: b_m = b_n = d = 128, 2 stages; the Triton options above "
                         "do not apply; variants default to GLUON_VARIANTS)")
    ap.add_argument("--stagger-us", default="0",
                    help="gluon fused and cc: program p starts stagger * p / K us late in every "
                         "launch (staggered phases; records of the run carry params.stagger_us); "
                         "'design': the stagger eq. 10 asks for on --profile "
                         "(xsim.attention.stagger; records also carry params.stagger_rule)")
    ap.add_argument("--profile", default="",
                    help="the calibrated platform --stagger-us design reads (default: "
                         "h200-pcie-host for --target host, h200-nvlink-x2 for peer)")
    ap.add_argument("--variants", default="", help="comma-separated (default: every variant of "
                    "the mainloop)")
    ap.add_argument("--table-from", default="", metavar="RECORDS.jsonl",
                    help="print the tables of an existing records file and exit (no GPU)")
    return ap.parse_args(argv)


def shapes(args, rank: int = 0) -> list[FAShape]:
    ms = [int(m) for m in args.seq_lens.split(",") if m] or list(SUITES[args.suite])
    return [FAShape(batch=max(1, args.tokens // m), heads=args.heads, seq_len=m,
                    head_dim=args.head_dim, sp=args.sp, rank=rank, block_m=args.block_m,
                    block_n=args.block_n) for m in ms]


def kernel_config(args) -> KernelConfig:
    """The kernel options of the command line (the stagger as given: 'design' is resolved later)."""
    return KernelConfig(args.num_warps, args.num_stages, args.tma, flatten=args.flatten,
                        ws=args.ws, pace=args.pace, pace_spread=not args.pace_consecutive,
                        pace_order=args.pace_order, pace_branch=not args.pace_masked,
                        pace_pf=bool(args.pace_pf),
                        swp=args.swp, emu=args.emu, early=args.early, split=args.split,
                        lsum=args.lsum, qpf=args.qpf, qreg=bool(args.qreg),
                        mainloop=args.mainloop, stagger_us=stagger_number(args.stagger_us))
