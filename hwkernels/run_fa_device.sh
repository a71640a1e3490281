#!/usr/bin/env bash
# One device call for the FA + A2A experiment (host target, one GPU), everything under $OUT:
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_fa_device.sh [TOTAL_SECONDS]
# tune.json/tune.log: tuning at M=8K and GPU correctness of every variant (fa_tune);
# fa-a2a.jsonl/bench.log: the sweep with the tuned configuration (fa_bench);
# fa-a2a-bm64.jsonl/bench-bm64.log: b_m = 64 on part of the sweep, in the time left.
set -o pipefail
total=${1:-340}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PYTHONWARNINGS=ignore
out=${OUT:-./out}; mkdir -p "$out"
left() { echo $(( total - SECONDS )); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max --format=csv
  python3 -c 'import torch, triton, cupy; print(torch.__version__, torch.version.cuda, triton.__version__, cupy.__version__, torch.backends.cudnn.version())'; } 2>&1 | tee "$out/env.log"
timeout 130 python3 -m hwkernels.fa_tune --json "$out/tune.json" > "$out/tune.log" 2>&1
echo "fa_tune rc=$? at ${SECONDS}s"; grep -v "^{" "$out/tune.log" | tail -40
cfg=(); [ -f "$out/tune.json" ] && grep -q '"best"' "$out/tune.json" && cfg=(--config "$out/tune.json")
timeout $(( $(left) - 45 )) python3 -m hwkernels.fa_bench --out "$out/fa-a2a.jsonl" --target host "${cfg[@]}" --repeats 8 > "$out/bench.log" 2>&1
echo "fa_bench rc=$? at ${SECONDS}s"; tail -16 "$out/bench.log"
if [ "$(left)" -gt 25 ]; then
  timeout $(( $(left) - 5 )) python3 -m hwkernels.fa_bench --out "$out/fa-a2a-bm64.jsonl" --target host --block-m 64 --block-n 64 --num-warps 4 --num-stages 3 --tma --seq-lens 1024,4096,2048,8192,16384 --variants fa-only,fused,serial,cc-atomic --repeats 5 > "$out/bench-bm64.log" 2>&1
  echo "fa_bench bm64 rc=$? at ${SECONDS}s"; tail -8 "$out/bench-bm64.log"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
