#!/bin/bash
# Reads beside host stores, the finer map (after run_read_beside_device.sh found L2-served reads on SMs that
# store nothing slowed by host stores in flight, HBM reads not): storers 8..99 x gaps 0..320 us, L2-served
# (8 MB) and HBM (1 GB) footprints, host and local destinations (docs/moe.md, "Reads beside host stores").
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_read_beside_map_device.sh      (writes under $OUT; <= 300 s)
set -u
: "${OUT:?OUT must name the output folder}" "${XSTAGE_COMMIT:?XSTAGE_COMMIT must be the commit measured}"
export PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 XSTAGE_COMMIT PYTHONUNBUFFERED=1
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv \
  > "$OUT/logs/smi-before.txt" 2>&1
timeout 280 python3 -m hwkernels.read_beside --out "$OUT/read-beside-map.jsonl" --storers 8,16,33,66,99 \
  --gaps-us 0,5,10,20,40,80,160,320 --footprints-mb 8,1024 --repeats 5 > "$OUT/logs/read-beside-map.log" 2>&1
echo "map rc $?"; tail -n 170 "$OUT/logs/read-beside-map.log" | grep "^|"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/logs/smi-after.txt" 2>&1
