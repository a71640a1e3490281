#!/bin/bash
# A new one-GPU host-link platform, calibrated once and then validated, in two device calls
# (docs/h100-host.md): the predictions are committed between them, so nothing measured over the
# link by the applications enters a prediction.
#   calib:    the GPU tests; the remote-store microbenchmarks into mapped host memory (the profile's
#             T_iss0, R, Q); the load-gate suites (full, late: the profile's gate); the fused MoE
#             kernel's local-Combine control (the compute model: fused-local mainloop records).
#   validate: the fused MoE catalog over the host link, both schedules (kernel records), and the
#             GEMM path against cuBLAS.
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_host_platform_device.sh calib|validate [BUDGET_S]   (under $OUT)
# At most 8 files come back from $OUT: records and traces as files, every log in one logs.tgz.
set -u
: "${OUT:?OUT must name the output folder}" "${XSTAGE_COMMIT:?XSTAGE_COMMIT must be the commit measured}"
export PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XSTAGE_COMMIT PYTHONUNBUFFERED=1
phase=${1:?phase: calib or validate}
budget=${2:-300}
logs=$OUT/logs
mkdir -p "$logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,pcie.link.gen.max,pcie.link.width.max \
  --format=csv > "$logs/env.log" 2>&1
step() {  # name, command...: run, log, time
  local name=$1 t0; shift; t0=$(date +%s)
  "$@" > "$logs/$name.log" 2>&1
  echo "$name rc $? $(( $(date +%s) - t0 )) s" | tee -a "$logs/env.log"
}
case $phase in
  calib)
    step gpu-tests python3 -m pytest -q -m gpu tests/test_hwkernels_fa.py tests/test_hwkernels_gpu.py \
      tests/test_hwkernels_loadgate.py tests/test_hwkernels_moe_gpu.py
    step micro env OUT="$logs/micro" TARGET=host bash hwkernels/run_device.sh full 1
    mv "$logs/micro/micro.jsonl" "$OUT/micro.jsonl"; mv "$logs/micro/traces.tar" "$OUT/traces.tar"
    step loadgate python3 -m hwkernels.loadgate_bench --suite full --out "$OUT/loadgate.jsonl" \
      --traces "$OUT/loadgate-traces.npz"
    step loadgate-late python3 -m hwkernels.loadgate_bench --suite late --out "$OUT/loadgate.jsonl" \
      --traces "$OUT/loadgate-late-traces.npz"
    step moe-local python3 -m hwkernels.moe_bench --target host --trials 20 --phases kernel --combine local \
      --budget-s "$budget" --out "$OUT/moe-local.jsonl"
    tail -n 3 "$logs/gpu-tests.log"; tail -n 4 "$logs/micro.log"; tail -n 2 "$logs/loadgate.log"
    tail -n 25 "$logs/moe-local.log" ;;
  validate)
    step moe-host python3 -m hwkernels.moe_bench --target host --trials 20 --phases kernel,signal \
      --budget-s "$budget" --out "$OUT/moe-host.jsonl"
    step moe-gemm python3 -m hwkernels.moe_bench --target host --trials 20 --phases gemm \
      --budget-s "$budget" --out "$OUT/moe-gemm.jsonl"
    tail -n 45 "$logs/moe-host.log"; tail -n 12 "$logs/moe-gemm.log" ;;
  *) echo "phase must be calib or validate, got $phase" >&2; exit 2 ;;
esac
cat "$logs/env.log"
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
