#!/usr/bin/env bash
# The device call of the fused-paced records (issue 11 item 4), everything under $OUT:
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_fa_pace_device.sh [TOTAL_SECONDS] [REPEATS]
# ab.json/ab.log: fused-paced chunk code A/B at M = 16K, 8K (16 or 8 chunks, uniform branch or
#   masked on every KV step); pace_args.txt: the fastest one's fa_bench options;
# fa-a2a.jsonl/bench.log: the full sweep, every variant, the default tile (b_m = b_n = 128,
#   8 warps, 3 stages, TMA, one program per SM), fused-paced with the picked options;
# cmp.json/cmp.log (in the time left): FA-only beside cuDNN SDPA, the shipped kernel ("base",
#   exp2 1 of 8 on the FMA pipe), the one before it ("base-e0", all exp2 on MUFU) and the
#   split last wave ("base-e1-s", FA-only only), 8 M, every point checked before it is timed.
set -o pipefail
total=${1:-225}
repeats=${2:-6}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PYTHONWARNINGS=ignore
out=${OUT:-./out}; mkdir -p "$out"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max --format=csv
  python3 -c 'import torch, triton, cupy; print(torch.__version__, torch.version.cuda, triton.__version__, cupy.__version__, torch.backends.cudnn.version())'; } 2>&1 | tee "$out/env.log"
timeout 36 python3 -m hwkernels.fa_explore --json "$out/ab.json" --sections pace:24 \
  --pace-ms 16384,8192 --paced p16,p16m,p8 --no-baselines --pick "$out/pace_args.txt" > "$out/ab.log" 2>&1
echo "ab rc=$? at ${SECONDS}s: $(cat "$out/pace_args.txt" 2>/dev/null)"; grep -v '^{' "$out/ab.log" | cut -c1-200 | tail -8
read -r -a pace_args < "$out/pace_args.txt" || pace_args=()
timeout $(( total - SECONDS )) python3 -m hwkernels.fa_bench --out "$out/fa-a2a.jsonl" --target host --tma \
  "${pace_args[@]}" --repeats "$repeats" > "$out/bench.log" 2>&1
echo "fa_bench rc=$? at ${SECONDS}s"; tail -13 "$out/bench.log" | cut -c1-200
if [ $(( total - SECONDS )) -gt 14 ]; then   # in the time left: shipped vs before vs cuDNN (FA-only)
  timeout $(( total - SECONDS )) python3 -m hwkernels.fa_explore --json "$out/cmp.json" --budget-s $(( total - SECONDS - 8 )) \
    --sections fa:$(( total - SECONDS - 8 )) --fa-ms 3072,1024,8192,2048,4096,6144,12288,16384 \
    --fa-configs base-e0,base,base-e1-s > "$out/cmp.log" 2>&1
  echo "cmp rc=$? at ${SECONDS}s"; sed -n '/^ *config /,$p' "$out/cmp.log"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
