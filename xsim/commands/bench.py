"""``xsim bench``: run the GPU experiments (starts ``torchrun`` itself; needs NVIDIA GPUs)."""

from __future__ import annotations

from pathlib import Path

from xsim.params import ParamError

EXPERIMENTS = ("micro", "moe", "fa-a2a")


def add_parser(sub):
    p = sub.add_parser("bench", help="run GPU experiments and append measurement records")
    p.add_argument("experiment", choices=EXPERIMENTS)
    p.add_argument("--nproc", type=int, metavar="N", help="GPUs to use (default: all)")
    p.add_argument("--out", type=Path, required=True, metavar="RECORDS.jsonl", help="records file to append to")
    p.add_argument("--target", choices=("peer", "host"), default="peer",
                   help="where remote stores land: another GPU over NVLink (peer, N >= 2) or pinned host "
                        "memory over PCIe (host, any N >= 1)")
    p.add_argument("--suite", choices=("full", "quick", "newk"), default="full",
                   help="micro sweep: full (the calibration), quick (a smoke run), newk (validation "
                        "at producer counts the full suite never runs); default full")
    p.add_argument("--mainloop", choices=("triton", "gluon"), default=None,
                   help="fa-a2a: the attention kernel, hwkernels/fa_kernels.py's (triton, the default) or "
                        "fa_gluon.py's warp-specialized one (gluon: the report's headline series since run 7)")
    return p


def run(args) -> int:
    # hwkernels.launch is standard library only: this never imports torch here.
    from hwkernels.launch import EXPERIMENTS as AVAILABLE
    from hwkernels.launch import NoGPUError, bench

    if args.experiment not in AVAILABLE:
        raise ParamError(f"the {args.experiment} experiment has no GPU kernels yet (available: {', '.join(AVAILABLE)})")
    if args.nproc is not None and args.nproc < 1:
        raise ParamError(f"--nproc must be >= 1, got {args.nproc}")
    from xsim.fileio import check_output

    extra = ["--suite", args.suite]
    if args.mainloop is not None:
        if args.experiment != "fa-a2a":
            raise ParamError(f"--mainloop is an fa-a2a option, not one of {args.experiment}")
        extra += ["--mainloop", args.mainloop]
    check_output(args.out, "records")  # records are appended there: a folder or a bad path fails now
    try:
        return bench(args.experiment, args.nproc, args.out, extra, target=args.target)
    except (NoGPUError, ValueError) as exc:
        raise ParamError(str(exc)) from None
