#!/usr/bin/env bash
# GPU validation, call 19 (nvidia-h200-x2; run as: bash benchmarks/gpu/call19.sh, carry .whl).
# Written 2026-11-30 (session 12) after call 18 showed small rows drifting together by +-1.5 %
# over seconds. Each card: benchmarks/gpu/clock_probe.py for 25 s quiet, then 25 s with a
# 300 ms full-bandwidth burst every 2 s; nvidia-smi sampled every 20 ms meanwhile.
# Results: $OUT/call19.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 19
LIMIT=150
probe() {
  export CUDA_VISIBLE_DEVICES=$1
  timeout -s INT -k 5 40 python3 benchmarks/gpu/clock_probe.py 25 --label "c$1quiet" \
    > "$W/clock_c$1.jsonl" 2> "$W/clock_c$1.err"
  echo "c$1 quiet rc=$?"
  timeout -s INT -k 5 40 python3 benchmarks/gpu/clock_probe.py 25 --heavy-every 2 --label "c$1heavy" \
    >> "$W/clock_c$1.jsonl" 2>> "$W/clock_c$1.err"
  echo "c$1 heavy rc=$?"
}
card0() { probe 0; }
card1() { probe 1; }
echo "start $(date +%T)"
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 20 > "$W/smi.csv" 2>&1 &
SMI=$!
zl_both card0 card1
kill "$SMI"
cat "$W/card0.log" "$W/card1.log"
tail -n 3 "$W"/clock_c*.err
python3 benchmarks/gpu/clock_report.py "$W"/clock_c*.jsonl
python3 - "$W/smi.csv" <<'PY'
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))[1:]
for idx in ("0", "1"):
    rs = [r for r in rows if len(r) > 6 and r[1].strip() == idx]
    print(f"card {idx}: {len(rs)} samples; SM clocks", collections.Counter(r[2].strip() for r in rs).most_common(6),
          "reasons", collections.Counter(r[6].strip() for r in rs).most_common(4),
          "power max", max(float(r[4].split()[0]) for r in rs))
PY
echo "end $(date +%T)"
