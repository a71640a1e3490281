#!/bin/bash
# Reads beside host stores (hwkernels.read_beside) in one device call: does an SM's read rate from the L2, or
# from HBM, drop while other SMs store to host memory, and how with the store rate and the storer count
# (docs/moe.md, "Reads beside host stores")?
#   first: storers 4..33 x gaps 0..160 us, 8 / 32 / 1024 MB sources, TMA loads; then plain loads (3b8df58)
#   map:   the finer map, storers 8..99 x gaps 0..320 us, 8 MB and 1 GB sources (16f109a)
#   paced: readers paced 0..2000 ns a tile (their own rate 75..13 GB/s) beside 33 / 66 storers below saturation
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_read_beside_device.sh [first|map]      (writes under $OUT; <= 300 s)
set -u
: "${OUT:?OUT must name the output folder}" "${XSTAGE_COMMIT:?XSTAGE_COMMIT must be the commit measured}"
export PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 XSTAGE_COMMIT PYTHONUNBUFFERED=1
phase=${1:-first}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv \
  > "$OUT/logs/smi-before.txt" 2>&1
rb() {  # name, timeout, options...: one run, its table printed
  local name=$1 limit=$2; shift 2
  timeout "$limit" python3 -m hwkernels.read_beside --out "$OUT/$name.jsonl" --repeats 5 "$@" \
    > "$OUT/logs/$name.log" 2>&1
  echo "$name rc $?"; grep "^|" "$OUT/logs/$name.log"
}
case $phase in
  first) rb read-beside 200 --storers 4,16,33 --gaps-us 0,10,40,160 --footprints-mb 8,32,1024
         rb read-beside-pointer 80 --loads pointer --storers 16 --gaps-us 0,40 --footprints-mb 8,1024 ;;
  map)   rb read-beside-map 280 --storers 8,16,33,66,99 --gaps-us 0,5,10,20,40,80,160,320 --footprints-mb 8,1024 ;;
  paced) rb read-beside-paced 200 --storers 33,66 --gaps-us 40,80,160,320 --footprints-mb 8 \
           --read-gaps-ns 0,250,500,1000,2000 ;;
  *)     echo "phase must be first, map or paced, got $phase" >&2; exit 2 ;;
esac
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/logs/smi-after.txt" 2>&1
