#!/usr/bin/env bash
# One device call: the paced chunks read one chunk step early (PF) against the shipped paced
# kernel, paired, then a smoke run of fa_bench --paired; everything under $OUT:
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_fa_pf_device.sh [TOTAL_SECONDS] [REPEATS] [MS]
# pytest-gpu.txt: python3 -m pytest -q -m gpu tests/test_hwkernels_fa.py tests/test_hwkernels_fa_pacepf.py;
# ab.json/ab.log: fa_paired, fa-only, fused-paced (PF off), fused-paced (PF on) per M, every
#   point checked on the receiver side, the three timed back to back per trial, rotating;
# smoke.jsonl/smoke.log: fa_bench --paired, every variant at M = 1K, 2 trials (the records' path).
set -o pipefail
total=${1:-250}
repeats=${2:-8}
ms=${3:-6144,8192,16384,4096,12288,32768}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PYTHONWARNINGS=ignore
out=${OUT:-./out}; mkdir -p "$out"
{ date -u; echo "commit ${XSTAGE_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max --format=csv
  python3 -c 'import torch, triton, cupy; print(torch.__version__, torch.version.cuda, triton.__version__, cupy.__version__, torch.backends.cudnn.version())'; } 2>&1 | tee "$out/env.log"
timeout 60 python3 -m pytest -q -m gpu tests/test_hwkernels_fa.py tests/test_hwkernels_fa_pacepf.py > "$out/pytest-gpu.txt" 2>&1
echo "pytest rc=$? at ${SECONDS}s"; tail -3 "$out/pytest-gpu.txt"
timeout $(( total - SECONDS - 40 )) python3 -m hwkernels.fa_paired --json "$out/ab.json" --seq-lens "$ms" \
  --entries fa-only,fused-paced:nopf,fused-paced:pf --repeats "$repeats" > "$out/ab.log" 2>&1
echo "ab rc=$? at ${SECONDS}s"; sed -n '/^ *M  *entry/,$p' "$out/ab.log"
timeout $(( total - SECONDS - 5 )) python3 -m hwkernels.fa_bench --out "$out/smoke.jsonl" --target host --tma \
  --paired --seq-lens 1024 --repeats 2 > "$out/smoke.log" 2>&1
echo "smoke rc=$? at ${SECONDS}s"; tail -3 "$out/smoke.log" | cut -c1-200
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
