#!/usr/bin/env bash
# The multi-GPU validation runs of issues 13 (NPROC=2) and 14 (NPROC=8), in one device call:
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_multi_gpu.sh NPROC [SUITE]
# 1. the microbenchmark suite over NVLink (--target peer; SUITE quick re-checks a shipped profile,
#    full calibrates a new one), pair and ring patterns;  2. xsim bench moe --target peer (EP = N,
#    moe_dist.py: kernel and signal phases, per-trial max over ranks);  3. xsim bench fa-a2a
#    --target peer (Ulysses SP = N, fa_dist.py). The N-rank MoE/FA paths were tested on the CPU
#    only (gloo) before this script first runs them. Records and logs under $OUT. The predictions these runs test
# were committed before them (benchmarks/results/moe_predictions_*, fa_a2a_predictions_*).
# Multicast stays off everywhere (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1).
set -o pipefail
nproc=${1:?usage: run_multi_gpu.sh NPROC [SUITE]}; suite=${2:-quick}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PYTHONWARNINGS=ignore::DeprecationWarning
out=${OUT:-./out}; mkdir -p "$out"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvidia-smi topo -m; } 2>&1 | tee "$out/env.log"
run() { python3 -m torch.distributed.run --nproc-per-node "$nproc" -m "$@"; }
run hwkernels.micro --target peer --out "$out/micro.jsonl" --suite "$suite" --traces /tmp/traces 2>&1 | tee "$out/micro.log"
run hwkernels.micro --target peer --out "$out/micro-ring.jsonl" --suite "$suite" --pattern ring --groups rfit 2>&1 | tee "$out/micro-ring.log"
run hwkernels.moe_bench --target peer --out "$out/moe.jsonl" 2>&1 | tee "$out/moe.log"
run hwkernels.fa_bench --target peer --out "$out/fa-a2a.jsonl" 2>&1 | tee "$out/fa-a2a.log"
if [ -d /tmp/traces ]; then tar -C /tmp -cf "$out/traces.tar" traces; fi
