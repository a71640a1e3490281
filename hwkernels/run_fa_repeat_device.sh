#!/usr/bin/env bash
# A repeat of the shipped fa-a2a sweep beside a same-session A/B of one kernel option, on the device:
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_fa_repeat_device.sh [TOTAL_SECONDS] [EMU_LIST] [MAX_SWEEPS]
# Runs the full sweep (every variant, the shipped tile and pace options of the committed logs) once
# per value of EMU_LIST (default "1 0": the shipped kernel, then the one before it), then repeats the
# list while the time left allows one more sweep; each sweep writes $OUT/sweep-<i>-emu<e>.jsonl and
# its log. Every record is checked against torch before it is timed (hwkernels.fa_bench).
set -o pipefail
total=${1:-520}
emus=${2:-"1 0"}
max_sweeps=${3:-3}        # 2 files a sweep + env.log: the device returns 8 files at most
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PYTHONWARNINGS=ignore
out=${OUT:-./out}; mkdir -p "$out"
read -r -a pace_args < calibration/records/logs/h200-pcie-host-fa-a2a/pace_args.txt || pace_args=()
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$out/env.log"
i=0; last=0
while :; do
  for e in $emus; do
    left=$(( total - SECONDS ))
    if [ "$i" -ge "$max_sweeps" ] || { [ "$last" -gt 0 ] && [ "$left" -lt $(( last + 10 )) ]; }; then break 2; fi
    start=$SECONDS
    timeout "$left" python3 -m hwkernels.fa_bench --out "$out/sweep-$i-emu$e.jsonl" --target host --tma \
      "${pace_args[@]}" --emu "$e" --repeats 6 > "$out/sweep-$i-emu$e.log" 2>&1
    echo "sweep $i emu=$e rc=$? in $(( SECONDS - start ))s"; tail -11 "$out/sweep-$i-emu$e.log" | cut -c1-150
    last=$(( SECONDS - start )); i=$(( i + 1 ))
  done
done
