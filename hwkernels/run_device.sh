#!/usr/bin/env bash
# Run the microbenchmark suite on a lent multi-GPU machine (device tool), logs under $OUT.
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_device.sh SUITE NPROC [extra args for micro]
set -o pipefail
suite=${1:-quick}; nproc=${2:-2}; shift 2 || true
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=.
out=${OUT:-./out}; mkdir -p "$out"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv;
  nvidia-smi topo -m; python3 -c 'import torch, triton, cupy; print(torch.__version__, torch.version.cuda, triton.__version__, cupy.__version__)'; } 2>&1 | tee "$out/env.log"
python3 -m torch.distributed.run --nproc-per-node "$nproc" -m hwkernels.micro \
  --out "$out/micro.jsonl" --suite "$suite" --traces /tmp/traces "$@" 2>&1 | tee "$out/micro.log"
rc=$?
if [ -d /tmp/traces ]; then tar -C /tmp -cf "$out/traces.tar" traces; fi
exit $rc
