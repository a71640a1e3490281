#!/usr/bin/env bash
# Run the microbenchmark suite on a lent multi-GPU machine (device tool), logs under $OUT.
#   XSTAGE_COMMIT=<sha> [RING=1] [CROSSCHECK=1] bash hwkernels/run_device.sh SUITE NPROC
# RING=1 adds a bidirectional (ring) pass over the zero-gap grid into micro-ring.jsonl;
# CROSSCHECK=1 adds the CUDA-vs-Triton drain-rate cross-check into crosscheck.jsonl.
set -o pipefail
suite=${1:-quick}; nproc=${2:-2}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=. TORCH_NCCL_SHOW_EAGER_INIT_P2P_SERIALIZATION_WARNING=false
export PYTHONWARNINGS=ignore::DeprecationWarning
out=${OUT:-./out}; mkdir -p "$out"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv;
  nvidia-smi topo -m; python3 -c 'import torch, triton, cupy; print(torch.__version__, torch.version.cuda, triton.__version__, cupy.__version__)'; } 2>&1 | tee "$out/env.log"
run() { python3 -m torch.distributed.run --nproc-per-node "$nproc" -m hwkernels.micro "$@"; }
extra=(); [ -n "$CROSSCHECK" ] && extra=(--crosscheck "$out/crosscheck.jsonl")
run --out "$out/micro.jsonl" --suite "$suite" --traces /tmp/traces "${extra[@]}" 2>&1 | tee "$out/micro.log"
rc=$?
if [ -n "$RING" ]; then
  run --out "$out/micro-ring.jsonl" --suite "$suite" --pattern ring --groups rfit 2>&1 | tee "$out/micro-ring.log"
fi
if [ -d /tmp/traces ]; then tar -C /tmp -cf "$out/traces.tar" traces; fi
exit $rc
