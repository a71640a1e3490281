#!/usr/bin/env bash
# One device call: the whole FA sweep at the shipped settings, then FA-only beside cuDNN for the
# kernel before the last change, then the FA GPU tests; everything under $OUT:
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_fa_sweep_device.sh [TOTAL_SECONDS] [REPEATS] [CMP_CFGS]
# fa-a2a.jsonl/bench.log: every variant, M = 1K .. 64K, b_m = b_n = 128, 8 warps, 3 stages, TMA,
#   fused-paced with 8 chunks, remote-first, uniform branch (run 3's pick, not re-picked);
# cmp.json/cmp.log (in the time left): fa_explore section fa, CMP_CFGS (default base-r0,base:
#   the kernel before the next-tile Q load and the shipped one), 8 M;
# pytest-gpu.txt: python3 -m pytest -q -m gpu tests/test_hwkernels_fa.py.
set -o pipefail
total=${1:-200}
repeats=${2:-6}
cmp=${3:-base-r0,base}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PYTHONWARNINGS=ignore
out=${OUT:-./out}; mkdir -p "$out"
{ date -u; echo "commit ${XSTAGE_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max --format=csv
  python3 -c 'import torch, triton, cupy; print(torch.__version__, torch.version.cuda, triton.__version__, cupy.__version__, torch.backends.cudnn.version())'; } 2>&1 | tee "$out/env.log"
timeout $(( total - 45 )) python3 -m hwkernels.fa_bench --out "$out/fa-a2a.jsonl" --target host --tma \
  --pace 8 --pace-order remote-first --repeats "$repeats" > "$out/bench.log" 2>&1
echo "fa_bench rc=$? at ${SECONDS}s"; tail -13 "$out/bench.log" | cut -c1-200
timeout 40 python3 -m pytest -q -m gpu tests/test_hwkernels_fa.py > "$out/pytest-gpu.txt" 2>&1
echo "pytest rc=$? at ${SECONDS}s"; tail -3 "$out/pytest-gpu.txt"
if [ $(( total - SECONDS )) -gt 14 ]; then
  timeout $(( total - SECONDS )) python3 -m hwkernels.fa_explore --json "$out/cmp.json" --budget-s $(( total - SECONDS - 6 )) \
    --sections fa:$(( total - SECONDS - 6 )) --fa-ms 3072,1024,8192,6144,2048,4096,12288,16384 \
    --fa-configs "$cmp" > "$out/cmp.log" 2>&1
  echo "cmp rc=$? at ${SECONDS}s"; sed -n '/^ *config /,$p' "$out/cmp.log"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
