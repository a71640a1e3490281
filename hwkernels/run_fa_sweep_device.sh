#!/usr/bin/env bash
# One device call: the whole FA sweep at the shipped settings, paired, then the FA GPU tests,
# then (in the time left) a paired A/B of the last kernel change; everything under $OUT:
#   XSTAGE_COMMIT=<sha> [FA_MAINLOOP=gluon] bash hwkernels/run_fa_sweep_device.sh [TOTAL_SECONDS] [REPEATS] [AB_ENTRIES] [AB_MS]
# FA_MAINLOOP=gluon: the sweep on fa_gluon's kernel (fa_variants.GLUON_VARIANTS), its GPU tests
#   first (tests/test_hwkernels_fa_gluon.py: a failure stops the call; then the paced ones in a
#   process of their own, pytest-gpu-paced.txt: if they fail, the sweep runs without fused-paced),
#   no A/B; the lines below describe the default (triton). FA_PAIRED=0: fa_bench without --paired
#   (each variant's trials in a block of its own after its warm-up, run 5's method).
#   FA_REPEAT_MS=8192,16384 (gluon): in the time left, the sweep again at those M into
#   fa-a2a-repeat.jsonl / bench-repeat.log (the run-to-run spread within one call).
#   FA_STAGGER_US=<us>|design (gluon): fused and cc with staggered program phases (fa_bench
#   --stagger-us; design: the stagger eq. 10 asks for on the calibrated profile, fa_stagger.py).
# fa-a2a.jsonl/bench.log: every variant, M = 1K .. 64K, b_m = b_n = 128, 8 warps, 3 stages, TMA,
#   fused-paced with 8 chunks, remote-first, uniform branch (run 3's pick, not re-picked), each
#   chunk read one chunk step early (--pace-pf 1, asked for here: fa_bench's default is off, the
#   kernel of the shipped run-5 records); fa_bench --paired: per M every variant
#   once per trial in a rotating order, records with params.paired_diff_us (to FA-only);
# pytest-gpu.txt: python3 -m pytest -q -m gpu tests/test_hwkernels_fa.py tests/test_hwkernels_fa_pacepf.py;
# ab.json/ab.log (in the time left): fa_paired, AB_ENTRIES (default: fa-only and fused-paced with
#   PF off and on) at AB_MS. (Run 5's call ran fa_explore section fa here: FA-only beside cuDNN
#   for the kernel before and after QREG; this script's history has it.)
set -o pipefail
total=${1:-200}
repeats=${2:-6}
ab=${3:-fa-only,fused-paced:nopf,fused-paced:pf}
abms=${4:-8192,16384,12288,6144}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PYTHONWARNINGS=ignore
out=${OUT:-./out}; mkdir -p "$out"
paired=--paired; [ "${FA_PAIRED:-1}" = 0 ] && paired=
stag=(); [ -n "${FA_STAGGER_US:-}" ] && stag=(--stagger-us "$FA_STAGGER_US")
{ date -u; echo "commit ${XSTAGE_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max --format=csv
  python3 -c 'import torch, triton, cupy; print(torch.__version__, torch.version.cuda, triton.__version__, cupy.__version__, torch.backends.cudnn.version())'; } 2>&1 | tee "$out/env.log"
if [ "${FA_MAINLOOP:-triton}" = gluon ]; then
  timeout 90 python3 -m pytest -q -m gpu -k "not paced" tests/test_hwkernels_fa_gluon.py > "$out/pytest-gpu.txt" 2>&1
  rc=$?; echo "pytest rc=$rc at ${SECONDS}s"; tail -3 "$out/pytest-gpu.txt"
  [ "$rc" = 0 ] || exit 1
  timeout 60 python3 -m pytest -q -m gpu -k paced tests/test_hwkernels_fa_gluon.py > "$out/pytest-gpu-paced.txt" 2>&1
  rc=$?; echo "pytest paced rc=$rc at ${SECONDS}s"; tail -3 "$out/pytest-gpu-paced.txt"
  vs=(); [ "$rc" = 0 ] || vs=(--variants fa-only,a2a-store,a2a-ce,serial,fused,cc-asm,sdpa-cudnn)
  timeout $(( total - SECONDS - 10 )) python3 -m hwkernels.fa_bench --out "$out/fa-a2a.jsonl" --target host \
    --mainloop gluon ${paired} "${vs[@]}" "${stag[@]}" --repeats "$repeats" > "$out/bench.log" 2>&1
  echo "fa_bench rc=$? at ${SECONDS}s"; tail -13 "$out/bench.log" | cut -c1-200
  if [ -n "${FA_REPEAT_MS:-}" ] && [ $(( total - SECONDS )) -gt 40 ]; then   # run-to-run spread
    timeout $(( total - SECONDS - 10 )) python3 -m hwkernels.fa_bench --out "$out/fa-a2a-repeat.jsonl" \
      --target host --mainloop gluon ${paired} "${vs[@]}" "${stag[@]}" --repeats "$repeats" --seq-lens "$FA_REPEAT_MS" \
      > "$out/bench-repeat.log" 2>&1
    echo "fa_bench repeat rc=$? at ${SECONDS}s"; tail -13 "$out/bench-repeat.log" | cut -c1-200
  fi
  nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv
  nvidia-smi -q -d PERFORMANCE > "$out/smi-performance.txt" 2>&1
  exit 0
fi
timeout $(( total - 45 )) python3 -m hwkernels.fa_bench --out "$out/fa-a2a.jsonl" --target host --tma \
  --pace 8 --pace-order remote-first --pace-pf 1 ${paired} --repeats "$repeats" > "$out/bench.log" 2>&1
echo "fa_bench rc=$? at ${SECONDS}s"; tail -13 "$out/bench.log" | cut -c1-200
timeout 40 python3 -m pytest -q -m gpu tests/test_hwkernels_fa.py tests/test_hwkernels_fa_pacepf.py > "$out/pytest-gpu.txt" 2>&1
echo "pytest rc=$? at ${SECONDS}s"; tail -3 "$out/pytest-gpu.txt"
if [ $(( total - SECONDS )) -gt 20 ]; then
  timeout $(( total - SECONDS - 3 )) python3 -m hwkernels.fa_paired --json "$out/ab.json" --seq-lens "$abms" \
    --entries "$ab" --repeats 8 > "$out/ab.log" 2>&1
  echo "ab rc=$? at ${SECONDS}s"; sed -n '/^ *M  *entry/,$p' "$out/ab.log"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
