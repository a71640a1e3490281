#!/bin/bash
# The fused MoE catalog on one GPU over the host link, as the shipped records are made: the GPU
# tests, then every config x both schedules at the scenarios' leads (kernel + signal phases),
# then the local-Combine control (kernel_local + fused-local mainloop records).
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_moe_device.sh [BUDGET_S]     (writes under $OUT)
set -u
: "${OUT:?OUT must name the output folder}" "${XSTAGE_COMMIT:?XSTAGE_COMMIT must be the commit measured}"
export PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 XSTAGE_COMMIT
budget=${1:-300}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pcie.link.gen.current,pcie.link.width.current \
  --format=csv > "$OUT/logs/env.log" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> "$OUT/logs/env.log" 2>&1
step() {  # name, command...: run, log, time
  local name=$1 t0; shift; t0=$(date +%s)
  "$@" > "$OUT/logs/$name.log" 2>&1
  echo "$name rc $? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/logs/env.log"
}
step gpu-tests python3 -m pytest -q -m gpu tests/test_hwkernels_fa.py tests/test_hwkernels_gpu.py \
  tests/test_hwkernels_loadgate.py tests/test_hwkernels_moe_gpu.py
step bench python3 -m hwkernels.moe_bench --target host --trials 20 --phases kernel,signal \
  --budget-s "$budget" --out "$OUT/moe-host.jsonl"
step bench-local python3 -m hwkernels.moe_bench --target host --trials 20 --phases kernel --combine local \
  --budget-s "$budget" --out "$OUT/moe-local.jsonl"
tail -n 3 "$OUT/logs/gpu-tests.log"; tail -n 45 "$OUT/logs/bench.log"
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
