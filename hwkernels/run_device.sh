#!/usr/bin/env bash
# Run the microbenchmark suite on a lent GPU machine (device tool), logs and records under $OUT.
#   XSTAGE_COMMIT=<sha> [TARGET=peer|host] [RING=1] [CROSSCHECK=1] bash hwkernels/run_device.sh SUITE NPROC
# TARGET (default peer) is where the stores land: peer (another GPU, NPROC >= 2) or host (pinned
# host memory over PCIe, NPROC >= 1). The bulk-copy (tma) points run in a second process after
# the rest, so a mechanism that faults on a destination loses nothing measured before it.
# RING=1 adds a bidirectional (ring) pass over the zero-gap grid into micro-ring.jsonl;
# CROSSCHECK=1 adds the CUDA-vs-Triton drain-rate cross-check into crosscheck.jsonl.
set -o pipefail
suite=${1:-quick}; nproc=${2:-2}; target=${TARGET:-peer}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=. TORCH_NCCL_SHOW_EAGER_INIT_P2P_SERIALIZATION_WARNING=false
export PYTHONWARNINGS=ignore::DeprecationWarning
out=${OUT:-./out}; mkdir -p "$out"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max --format=csv;
  nvidia-smi topo -m; python3 -c 'import torch, triton, cupy; print(torch.__version__, torch.version.cuda, triton.__version__, cupy.__version__)'; } 2>&1 | tee "$out/env.log"
run() { python3 -m torch.distributed.run --nproc-per-node "$nproc" -m hwkernels.micro --target "$target" "$@"; }
extra=(); [ -n "$CROSSCHECK" ] && extra=(--crosscheck "$out/crosscheck.jsonl")
run --out "$out/micro.jsonl" --suite "$suite" --traces /tmp/traces --mechanisms st.v4,st.v2,st.b32,copy-engine,nccl \
    "${extra[@]}" 2>&1 | tee "$out/micro.log"
rc=$?
run --out "$out/micro.jsonl" --suite "$suite" --traces /tmp/traces --mechanisms tma 2>&1 | tee -a "$out/micro.log"
rc_tma=$?
if [ -n "$RING" ]; then
  run --out "$out/micro-ring.jsonl" --suite "$suite" --pattern ring --groups rfit 2>&1 | tee "$out/micro-ring.log"
fi
if [ -d /tmp/traces ]; then tar -C /tmp -cf "$out/traces.tar" traces; fi
echo "# exit codes: stores $rc, tma $rc_tma"
exit $rc
