#!/bin/bash
# GEMM tiles beside host stores (hwkernels.moe_beside) on whichever one-GPU machine is lent, in one
# device call (docs/moe.md, "GEMM tiles beside host stores"):
#   H200: the four default layers and dit-moe hot, own 0..12 and beside 8..116 (the H200 has no beside
#         records yet), then the local-Combine duty records the H200's MoE clock law lacks.
#   H100: all eighteen catalog layers have records (4927f02, 1dfc2a3, 88be5e4): two of them again, as a check.
#   Both, then: the blocked-routing probes of hwkernels/beside_probes.toml beside their scattered twins,
#   and the fourth set (top-1, 8192 tokens); then two probes with the Combine stores hinted out of the L2.
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_moe_beside_device.sh      (writes under $OUT; <= 540 s on an H200)
#   ... run_moe_beside_device.sh traces: only three probes with --traces (own 1, 4, 12 and beside 66; <= 300 s)
#   ... run_moe_beside_device.sh fused-traces: six catalog layers' fused kernels traced over the host link and
#       locally, then three catalog layers beside host stores (<= 520 s)
#   ... run_moe_beside_device.sh fused-traces rest: the other twelve catalog layers' fused kernels traced the
#       same way, nothing beside (<= 420 s)
#   ... run_moe_beside_device.sh hints: the eighteen catalog layers (20 trials) over the host link, locally,
#       locally with the Combine hinted cs and evict_first, locally again: what the local control's Combine into
#       device memory costs the mainloops (docs/moe.md, "All eighteen layers traced", Next 1; <= 320 s)
set -u
: "${OUT:?OUT must name the output folder}" "${XSTAGE_COMMIT:?XSTAGE_COMMIT must be the commit measured}"
export PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 XSTAGE_COMMIT PYTHONUNBUFFERED=1
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv > "$OUT/logs/smi-before.csv" 2>&1
if [ "${1:-}" = traces ]; then   # per-tile stamps of three probes (benchmarks/moe_beside_traces.py reads them)
  for c in probe-shortk-few-experts probe-h1408-e16-t1024 probe-dit-balanced; do
    timeout 100 python3 -m hwkernels.moe_beside --out "$OUT/beside-traces.jsonl" --configs $c --own 1,4,12 \
      --storers 66 --repeats 3 --traces "$OUT/traces-$c.npz" > "$OUT/logs/traces-$c.log" 2>&1
    echo "$c rc $?"; grep "^|" "$OUT/logs/traces-$c.log" | tail -n 8
  done
  exit 0
fi
if [ "${1:-}" = fused-traces ]; then   # the fused kernel's own per-tile stamps over the host link and locally
  # (hwkernels.moe_bench --traces; benchmarks/moe_beside_traces.py --name moe_fused_traces pairs them), for the
  # layers the model misses most and two it gets right; then three catalog layers traced beside host stores
  c=moe1-dit-moe-bf16-zipf-4096,moe1-hunyuan-large-bf16-balanced-1024,moe1-mimo-v2.5-bf16-balanced-4096
  c=$c,moe1-dsv4-flash-fp8-balanced-1024,moe1-hy3-bf16-balanced-1024,moe1-qwen3-30b-fp8-balanced-4096
  t=200
  if [ "${2:-}" = rest ]; then   # the catalog's other twelve layers
    c=moe1-dit-moe-bf16-hot-4096,moe1-dsv4-flash-bf16-balanced-1024,moe1-dsv4-flash-bf16-hot-1024
    c=$c,moe1-dsv4-flash-bf16-zipf-1024,moe1-dsv4-flash-bf16-zipf-4096,moe1-glm-5.2-fp8-balanced-1024
    c=$c,moe1-glm-5.2-fp8-hot-4096,moe1-hy3-bf16-hot-1024,moe1-hy3-fp8-zipf-4096,moe1-mimo-v2.5-fp8-hot-1024
    c=$c,moe1-qwen3-30b-bf16-zipf-4096,moe1-qwen3.5-bf16-zipf-1024
  fi
  for dest in host local; do
    timeout $t python3 -m hwkernels.moe_bench --out "$OUT/fused-traces.jsonl" --combine $dest --configs "$c" \
      --trials 5 --phases kernel --traces "$OUT/fused-traces-$dest.npz" > "$OUT/logs/fused-traces-$dest.log" 2>&1
    echo "fused $dest rc $?"; tail -n 26 "$OUT/logs/fused-traces-$dest.log"
  done
  [ "${2:-}" = rest ] && exit 0
  timeout 120 python3 -m hwkernels.moe_beside --out "$OUT/beside-traces.jsonl" --own 1,4,12 --storers 66 \
    --configs moe1-dit-moe-bf16-zipf-4096,moe1-hy3-bf16-balanced-1024,moe1-mimo-v2.5-bf16-balanced-4096 \
    --repeats 3 --budget-s 80 --traces "$OUT/beside-traces-catalog.npz" > "$OUT/logs/beside-traces-catalog.log" 2>&1
  echo "beside catalog rc $?"; grep "^|" "$OUT/logs/beside-traces-catalog.log" | tail -n 12
  exit 0
fi
if [ "${1:-}" = hints ]; then   # the whole catalog, so that a hinted local run can also serve as compute records
  for run in ${HINT_RUNS:-host local local:cs local:evict_first local}; do   # HINT_RUNS: fewer, where time is short
    dest=${run%%:*} hint=${run#*:}; [ "$hint" = "$run" ] && hint=""
    timeout $([ $dest = host ] && echo 100 || echo 55) python3 -m hwkernels.moe_bench --out "$OUT/hints.jsonl" \
      --combine $dest --combine-hint "$hint" --trials 20 --phases kernel >> "$OUT/logs/hints.log" 2>&1
    echo "$run rc $?"
  done
  grep "^kernel" "$OUT/logs/hints.log"
  exit 0
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
case "$gpu" in
  *H200*) configs=moe1-dit-moe-bf16-zipf-4096,moe1-hy3-bf16-balanced-1024,moe1-glm-5.2-fp8-balanced-1024
          configs=$configs,moe1-mimo-v2.5-bf16-balanced-4096,moe1-dit-moe-bf16-hot-4096
          own=0,1,2,3,4,6,8,12 storers=8,16,33,50,66,82,99,116 t=170 ;;
  *)      configs=moe1-dit-moe-bf16-zipf-4096,moe1-hy3-bf16-balanced-1024
          own=0,1,2,3,4,8 storers=33,66,99 t=120 ;;
esac
probes=probe-shortk-blocked,probe-shortk-few-experts,probe-dit-blocked,probe-dit-balanced,probe-shortk-top1,probe-shortk-t8192
echo "$gpu: $configs, then $probes"
timeout $t python3 -m hwkernels.moe_beside --out "$OUT/moe-beside.jsonl" --configs "$configs" --own "$own" \
  --storers "$storers" --repeats 5 --budget-s $((t - 50)) > "$OUT/logs/beside.log" 2>&1
echo "beside rc $?"; tail -n 30 "$OUT/logs/beside.log"
# the synthetic probes (hwkernels/beside_probes.toml), both GPUs: where the Combine's stores land (blocked
# routing) against the same layers scattered, the open question after the H100's probes (docs/moe.md)
timeout 90 python3 -m hwkernels.moe_beside --out "$OUT/moe-beside-probes.jsonl" --configs "$probes" \
  --own 1,2,4,8,12 --storers 33,66 --repeats 5 --budget-s 60 > "$OUT/logs/beside-probes.log" 2>&1
echo "probes rc $?"; tail -n 30 "$OUT/logs/beside-probes.log"
# the same kernel with the Combine stores hinted out of the L2 (KernelConfig.combine_hint): if the stretch is
# the host lines crowding the expert weights' reuse out of the L2, a hint should shrink it
for hint in cs evict_first; do
  timeout 50 python3 -m hwkernels.moe_beside --out "$OUT/moe-beside-hints.jsonl" --combine-hint $hint \
    --configs probe-shortk-few-experts,probe-dit-balanced --own 1,2,4,8,12 --storers 33,66 --repeats 5 \
    --budget-s 25 > "$OUT/logs/beside-hint-$hint.log" 2>&1
  echo "hint $hint rc $?"; tail -n 16 "$OUT/logs/beside-hint-$hint.log"
done
case "$gpu" in
  *H200*) GAPS=0,0.2,0.5,1.5 REPEATS=2 timeout 170 bash hwkernels/run_moe_clock_device.sh duty 120 \
            > "$OUT/logs/duty-driver.log" 2>&1; echo "duty rc $?"; tail -n 20 "$OUT/logs/duty-driver.log" ;;
esac
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/logs/smi-after.csv" 2>&1
