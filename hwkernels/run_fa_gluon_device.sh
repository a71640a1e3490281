#!/usr/bin/env bash
# The Gluon attention forward (hwkernels/fa_gluon.py) on one H200, everything under $OUT:
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_fa_gluon_device.sh [TOTAL_SECONDS] [CANDIDATES]
# env.log; check.json/.log: every candidate at 1K and 8K against torch SDPA in float32, one
# process under a timeout (a hung kernel stops it there: the log's last line); gluon.json/.log: the
# candidates that passed, the shipped Triton kernel and cuDNN, FA-only at 8 M (fa_gluon_explore);
# pytest-gpu.txt: the GPU tests of the module.
set -o pipefail
total=${1:-150}
cands=${2:-g-s3-o0,g-s3-o1,g-s3-o2,g-s2-o2,g-s3-o0-pp,g-s3-o2-pp,g-s3-o2-grid}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PYTHONWARNINGS=ignore
out=${OUT:-./out}; mkdir -p "$out"
{ date -u; echo "commit ${XSTAGE_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__, torch.backends.cudnn.version())'; } 2>&1 | tee "$out/env.log"
timeout 90 python3 -m hwkernels.fa_gluon_explore --check --candidates "$cands" --no-base \
  --json "$out/check.json" > "$out/check.log" 2>&1
echo "check rc=$? at ${SECONDS}s"; cut -c1-200 "$out/check.log" | grep -v '^$' | tail -20
# the candidates with every check line ok (a hung one leaves no line: the log says where it stopped)
ok=$(python3 - "$out/check.log" "$cands" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(",".join(n for n in sys.argv[2].split(",")
               if [r for r in rows if r["name"] == n] and all(r["ok"] for r in rows if r["name"] == n)))
PY
)
echo "passed: $ok"
left=$(( total - SECONDS - 25 ))
if [ -n "$ok" ] && [ $left -gt 20 ]; then
  timeout $left python3 -m hwkernels.fa_gluon_explore --candidates "$ok" --budget-s $(( left - 5 )) \
    --json "$out/gluon.json" ${XCHECK:+--xcheck} > "$out/gluon.log" 2>&1
  echo "explore rc=$? at ${SECONDS}s"
  sed -n '/cuDNN us/,$p' "$out/gluon.log"; grep -E '^ *config|^ *base ' "$out/gluon.log"
fi
timeout 20 python3 -m pytest -q -m gpu tests/test_hwkernels_fa_gluon.py > "$out/pytest-gpu.txt" 2>&1
echo "pytest rc=$? at ${SECONDS}s"; tail -2 "$out/pytest-gpu.txt"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
