#!/bin/bash
# Reads beside host stores (hwkernels.read_beside) in one device call: does an SM's read rate from the L2, or
# from HBM, drop while other SMs store to host memory, and does it depend on the store rate
# (docs/moe.md, "GEMM tiles beside host stores")?
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_read_beside_device.sh      (writes under $OUT; <= 300 s)
set -u
: "${OUT:?OUT must name the output folder}" "${XSTAGE_COMMIT:?XSTAGE_COMMIT must be the commit measured}"
export PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 XSTAGE_COMMIT PYTHONUNBUFFERED=1
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv \
  > "$OUT/logs/smi-before.txt" 2>&1
# TMA reads (as the MoE mainloops read): L2-served footprints of 8 and 32 MB, and 1 GB from HBM
timeout 200 python3 -m hwkernels.read_beside --out "$OUT/read-beside.jsonl" --storers 4,16,33 \
  --gaps-us 0,10,40,160 --footprints-mb 8,32,1024 --repeats 5 > "$OUT/logs/read-beside.log" 2>&1
echo "tma rc $?"; tail -n 80 "$OUT/logs/read-beside.log" | grep "^|"
# the same with plain loads (LSU, not TMA)
timeout 80 python3 -m hwkernels.read_beside --out "$OUT/read-beside-pointer.jsonl" --loads pointer \
  --storers 16 --gaps-us 0,40 --footprints-mb 8,1024 --repeats 5 > "$OUT/logs/read-beside-pointer.log" 2>&1
echo "pointer rc $?"; tail -n 20 "$OUT/logs/read-beside-pointer.log" | grep "^|"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/logs/smi-after.txt" 2>&1
