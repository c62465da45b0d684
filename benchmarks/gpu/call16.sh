#!/usr/bin/env bash
# GPU validation, call 16 (nvidia-h200-x2; run as: bash benchmarks/gpu/call16.sh, carry .fg and .whl).
# Written 2026-11-30 after call 15, with the primer and the xdist report fold.
#  card 1: the fatal check under xdist (-n 1) with this build: one failure, the next test
#    measured by the replacement worker.
#  card 0: benchmarks/gpu/rowrepeat in 6 processes (abs, sum 64x64, mm 384^2 fp16, 12 rows each
#    with host work between rows): are the microsecond rows' offsets per process or per
#    measurement (row-to-row inside one process against process-to-process)?
# Results: $OUT/call16.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 16
LIMIT=150
card0() {
  export CUDA_VISIBLE_DEVICES=0
  cd benchmarks/gpu/rowrepeat
  for i in 1 2 3 4 5 6; do
    s=$(lim 40) || { echo "rows$i: skipped"; continue; }
    timeout -s INT -k 5 "$s" python3 -m pytest -p no:cacheprovider -q --zl-graph-replays=30 \
      --zl-graph-budget-ms=10 --zl-out="$W/rows$i" | tail -n 1
  done
  python3 - "$W" <<'PY'
import json, statistics as st, sys
from pathlib import Path
per = {}
for d in sorted(Path(sys.argv[1]).glob("rows*/rows.jsonl")):
    for line in d.read_text().splitlines():
        r = json.loads(line)
        per.setdefault(r["op"], {}).setdefault(d.parent.name, []).append(r["latency"] * 1e3)
for op, procs in per.items():
    meds = [st.median(v) for v in procs.values()]
    within = st.median(st.stdev(v) / st.mean(v) for v in procs.values())
    mid = st.median(meds)
    print(f"{op}: {len(procs)} processes x {len(next(iter(procs.values())))} rows, median {mid:.3f} us; "
          f"row-to-row SD in a process (median) {within*100:.2f} %; SD of process medians "
          f"{st.stdev(meds)/mid*100:.2f} %; range of process medians {(max(meds)-min(meds))/mid*100:.2f} %")
    for name, v in procs.items():
        print("   ", name, " ".join(f"{x:.3f}" for x in v))
PY
}
card1() {
  export CUDA_VISIBLE_DEVICES=1
  cd benchmarks/gpu/fatal
  timeout -s INT -k 5 "$(lim 90)" python3 -m pytest -n 1 --zl-out="$W/fatal_xdist" -p no:cacheprovider \
    -q -rfE --junitxml="$W/fatal_xdist.xml" > "$W/fatal_xdist.log" 2>&1
  echo "fatal_xdist: rc=$?"
  grep -E "replacing|FAILED|passed|failed|zlbench:" "$W/fatal_xdist.log"
  cat "$W/fatal_xdist/rows.jsonl"
}
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
echo "end $(date +%T)"
