#!/usr/bin/env bash
# The exploration call of issue 11's FA-only >= 0.80x cuDNN target, everything under $OUT:
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_fa_exp2_device.sh [TOTAL_SECONDS]
# exp2.json/exp2.log: FA-only beside cuDNN SDPA at 8 M (every point receiver-checked before it is
#   timed): the shipped kernel, the exp2 partly on the FMA pipe (-e<k>: k of every 8, fa_exp2),
#   the softmax rescale first (-a), the last partial wave split along KV (-s, fa_split; 3K only),
#   on b_m = 128 and on 64/64/4/3 x 2 per SM; then every kernel variant (fused, paced, cc) with
#   the shipped kernel and the two best b_m = 128 candidates at 1K and 8K ("var configs: ...").
# FA_CFGS=<comma-separated fa_explore names> replaces the configuration list.
set -o pipefail
total=${1:-330}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PYTHONWARNINGS=ignore
out=${OUT:-./out}; mkdir -p "$out"
{ date -u; echo "commit ${XSTAGE_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__, torch.backends.cudnn.version())'; } 2>&1 | tee "$out/env.log"
cfgs=base,base-e1,base-e2,base-e3,base-e4,base-a,base-a-e1,base-a-e2,base-a-e3
cfgs=$cfgs,base-s,base-e1-s,base-e2-s,base-a-e1-s,base-a-e2-s
cfgs=$cfgs,bm64x2,bm64x2-e1,bm64x2-e2,bm64x2-a,bm64x2-a-e1,bm64x2-a-e2,bm64x2-s,bm64x2-a-e2-s
cfgs=${FA_CFGS:-$cfgs}     # the call of the row sums on the tensor cores (-l) set FA_CFGS
left=$(( total - SECONDS - 12 ))
timeout $left python3 -m hwkernels.fa_explore --json "$out/exp2.json" --budget-s $(( left - 8 )) \
  --sections fa:$(( left * 6 / 10 )),var:$(( left * 4 / 10 )) --fa-ms 3072,8192,1024,6144,2048,4096,16384,12288 \
  --fa-configs "$cfgs" --var-ms 1024,8192 --var-configs auto > "$out/exp2.log" 2>&1
echo "explore rc=$? at ${SECONDS}s"
grep -E '^var configs|^ var' "$out/exp2.log" | cut -c1-170
sed -n '/^ *config /,$p' "$out/exp2.log"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
