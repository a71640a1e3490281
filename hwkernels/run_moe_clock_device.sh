#!/bin/bash
# The MoE kernel's clock at the power cap, in two device calls (docs/moe.md, "The MoE kernel's own
# clock law"):
#   duty:   the local-Combine kernel of every config x both schedules alone and with idle gaps
#           (hwkernels.moe_duty): the records calibration.power.fit_moe_clock_law fits.
#   steady: the catalog over the host link timed back to back (moe_bench --steady-s 0.2): the
#           out-of-sample test of predictions committed from the law before this run.
#   burst:  the same catalog timed as the report's records are (no heat): beside a steady run of the
#           same call, what the power cap alone changes.
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_moe_clock_device.sh duty|steady|burst [BUDGET_S]   (writes under $OUT)
# Optional: GAPS (duty's idle gaps, kernel lengths), REPEATS (duty), TRIALS (steady and burst).
set -u
: "${OUT:?OUT must name the output folder}" "${XSTAGE_COMMIT:?XSTAGE_COMMIT must be the commit measured}"
export PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 XSTAGE_COMMIT PYTHONUNBUFFERED=1
phase=${1:?phase: duty, steady or burst}
budget=${2:-420}
gaps=${GAPS:-0,0.1,0.2,0.3,0.5,1.5} repeats=${REPEATS:-3} trials=${TRIALS:-20}
mkdir -p "$OUT/logs"
smi() {  # read-only: the board's clocks, power and temperature
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
    --format=csv > "$OUT/logs/smi-$phase-$1.csv" 2>&1
}
smi before
case $phase in
  duty)   python3 -m hwkernels.moe_duty --out "$OUT/moe-duty.jsonl" --gaps "$gaps" --repeats "$repeats" \
            --budget-s "$budget" > "$OUT/logs/duty.log" 2>&1 ;;
  steady) python3 -m hwkernels.moe_bench --target host --trials "$trials" --phases kernel --steady-s 0.2 \
            --budget-s "$budget" --out "$OUT/moe-steady.jsonl" > "$OUT/logs/steady.log" 2>&1 ;;
  burst)  python3 -m hwkernels.moe_bench --target host --trials "$trials" --phases kernel \
            --budget-s "$budget" --out "$OUT/moe-burst.jsonl" > "$OUT/logs/burst.log" 2>&1 ;;
  *)      echo "phase must be duty, steady or burst, got $phase" >&2; exit 2 ;;
esac
rc=$?
smi after
echo "$phase rc $rc"
tail -n 45 "$OUT/logs/$phase.log"
exit $rc
