#!/usr/bin/env bash
# One device call: the SM clock, power and the SW power-cap flag sampled every 100 ms by nvidia-smi
# while fa_bench times FA-only, fused, serial and fused-paced on the Gluon forward at 16K and 32K,
# each fa_bench output line stamped with the wall time, so each variant's block of trials (its
# warm-up and instrumented runs included) can be matched with the clocks it ran at. Under $OUT:
#   XSTAGE_COMMIT=<sha> bash hwkernels/run_fa_dvfs_device.sh [SECONDS]
# smi.csv (the samples), bench.log (stamped lines), fa-a2a.jsonl (the records; not shipped), env.log.
set -o pipefail
total=${1:-120}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PYTHONWARNINGS=ignore
out=${OUT:-./out}; mkdir -p "$out"
{ date -u; echo "commit ${XSTAGE_COMMIT:-unknown}"; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv; } | tee "$out/env.log"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.sw_power_cap --format=csv,nounits -lms 100 > "$out/smi.csv" 2>&1 &
smi=$!
timeout "$total" python3 -m hwkernels.fa_bench --out "$out/fa-a2a.jsonl" --target host --mainloop gluon \
  --seq-lens 16384,32768 --variants fa-only,fused,serial,fused-paced,fa-only --repeats 8 2>&1 \
  | while IFS= read -r line; do printf '%s %s\n' "$(date -u +%Y/%m/%d\ %H:%M:%S.%3N)" "$line"; done > "$out/bench.log"
echo "fa_bench rc=$? at ${SECONDS}s"
kill "$smi"; wait "$smi" 2>/dev/null
python3 - "$out" <<'PY'
import sys, csv, datetime as dt
out = sys.argv[1]
fmt = "%Y/%m/%d %H:%M:%S.%f"
smi = []
for row in csv.reader(open(f"{out}/smi.csv")):
    try:
        smi.append((dt.datetime.strptime(row[0].strip(), fmt), float(row[1]), float(row[2]), row[3].strip()))
    except (ValueError, IndexError):
        pass
prev = smi[0][0] if smi else None
print("block (ends at the line)            samples  SM MHz median  min   max   W median  power-capped")
for line in open(f"{out}/bench.log"):
    if " ok=" not in line:
        continue
    t = dt.datetime.strptime(line[:23], "%Y/%m/%d %H:%M:%S.%f")
    s = sorted(x for x in smi if prev <= x[0] <= t)
    if s:
        mhz = sorted(x[1] for x in s); w = sorted(x[2] for x in s)
        cap = sum(x[3] == "Active" for x in s) / len(s)
        name = line[24:].split(":")[0]
        print(f"{name:<34} {len(s):>7}  {mhz[len(mhz)//2]:>12.0f}  {mhz[0]:>4.0f}  {mhz[-1]:>4.0f}  {w[len(w)//2]:>8.0f}  {cap:>11.0%}")
    prev = t
PY
