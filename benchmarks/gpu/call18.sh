#!/usr/bin/env bash
# GPU validation, call 18 (nvidia-h200-x2; run as: bash benchmarks/gpu/call18.sh, carry .fg and .whl).
# Written 2026-11-30 (session 12). Both cards: benchmarks/gpu/placement_probe.py in 3 processes
# each, 7 rounds of 5 operators x 4 ways (fixedout, fixed, fresh, multi5): do microsecond rows
# move with where their tensors sit in memory, and does a median over 5 placements pin them?
# Results: $OUT/call18.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 18
LIMIT=330
probe() {
  export CUDA_VISIBLE_DEVICES=$1
  for i in 1 2 3; do
    s=$(lim 120) || { echo "c$1 p$i: skipped"; continue; }
    timeout -s INT -k 5 "$s" python3 benchmarks/gpu/placement_probe.py 7 --label "c$1p$i" \
      >> "$W/placement_c$1.jsonl" 2>> "$W/placement_c$1.err"
    echo "c$1 p$i: rc=$? at $(date +%T)"
  done
}
card0() { probe 0; }
card1() { probe 1; }
echo "start $(date +%T)"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
tail -n 3 "$W"/placement_c*.err
python3 benchmarks/gpu/placement_report.py "$W"/placement_c*.jsonl
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
echo "end $(date +%T)"
