#!/usr/bin/env bash
# GPU validation, call 17 (nvidia-h200-x2; run as: bash benchmarks/gpu/call17.sh, carry .fg and .whl).
# Written 2026-11-30 after call 16: alone, abs/sum 64x64 and mm 384^2 fp16 agree across 6
# processes to 1.35 % / 0.64 % / 0.57 % (range of process medians), but in FlagGems runs the
# 64x64 rows that follow a test's largest shape (abs, mul: about 1-2 ms a call) vary most.
# benchmarks/gpu/rowrepeat with ZL_HEAVY_MS=300 (300 calls of abs on 2^30 fp16 before each row),
# 8 rows per op, and with the timer's experimental settle (untimed replays for 50 / 200 ms of
# device time before the timed ones). Card 0 logs nvidia-smi clocks during its first process.
# This call ran an uncommitted build whose GraphTimer had a settle_ms attribute, set from
# ZL_SETTLE_MS by a session fixture in rowrepeat/test_rows.py; both were removed after it
# (settling changed nothing), so ZL_SETTLE_MS is a no-op now.
# Results: $OUT/call17.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 17
LIMIT=130
run() {  # card name settle_ms
  CUDA_VISIBLE_DEVICES=$1 ZL_ROWS=8 ZL_HEAVY_MS=300 ZL_SETTLE_MS=$3 timeout -s INT -k 5 "$(lim 30)" \
    python3 -m pytest -p no:cacheprovider -q --zl-graph-replays=30 --zl-graph-budget-ms=10 \
    --zl-out="$W/$2" | tail -n 1
}
card0() {
  cd benchmarks/gpu/rowrepeat
  nvidia-smi -i 0 --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,noheader -lms 20 > "$W/clocks0.csv" 2>&1 &
  local smi=$!
  run 0 c0_heavy1 0
  kill "$smi"
  for i in 1 2 3; do run 0 "c0_settle50_$i" 50; [ "$i" -lt 3 ] && run 0 "c0_heavy$((i + 1))" 0; done
}
card1() {
  cd benchmarks/gpu/rowrepeat
  for i in 1 2 3; do run 1 "c1_heavy$i" 0; run 1 "c1_settle200_$i" 200; done
}
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
python3 - "$W" <<'PY'
import json, statistics as st, sys
from pathlib import Path
groups = {}
for d in sorted(Path(sys.argv[1]).glob("c*/rows.jsonl")):
    name = d.parent.name.rstrip("0123456789").rstrip("_")
    for line in d.read_text().splitlines():
        r = json.loads(line)
        groups.setdefault((name, r["op"]), {}).setdefault(d.parent.name, []).append(r["latency"] * 1e3)
for (name, op), procs in sorted(groups.items()):
    meds = [st.median(v) for v in procs.values()]
    within = st.median(st.stdev(v) / st.mean(v) for v in procs.values())
    mid = st.median(meds)
    print(f"{name:12s} {op}: {len(procs)} processes, median {mid:.3f} us; row-to-row SD {within*100:.2f} %; "
          f"process medians range {(max(meds)-min(meds))/mid*100:.2f} %")
    for p, v in procs.items():
        print("     ", p, " ".join(f"{x:.3f}" for x in v))
PY
awk -F', ' '{print $2, $4, $6}' "$W/clocks0.csv" | sort | uniq -c | sort -rn | head -n 12
echo "end $(date +%T)"
