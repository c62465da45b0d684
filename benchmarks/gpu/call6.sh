#!/usr/bin/env bash
# GPU validation, call 6 (nvidia-h200-x2; run as: bash benchmarks/gpu/call6.sh, carry .fg and .whl):
# timer noise, second pass (issue 3, show 1). Same selection as call 2 (abs, mul, sum, fft, mm
# at --level core, all default dtypes); every run replays the committed LibTuner seed, so the
# two processes of a pair run the same configs. Card 0: our warm graph timer with 30 replays of
# 10 ms (call 2 used 10 of 20 ms), then 100 replays of 5 ms if time is left. Card 1: our cold
# graph timer (its replay budget now covers flush + op). Results: $OUT/call6.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 6
cd .fg
SEL="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_sum.py::test_sum benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
COMMON="--level core -p no:cacheprovider -q --zl-replay-from=$SEED"
run() {  # run NAME LIMIT OPTIONS...: one process, skipped when the call's time is nearly gone
  local name=$1 limit=$2; shift 2
  local left=$(( 570 - ($(date +%s) - START) )); [ "$left" -gt 60 ] || { echo "$name: skipped, ${left}s left"; return; }
  [ "$limit" -lt "$left" ] || limit=$left
  local t0=$(date +%s)
  timeout -s INT "$limit" python3 -m pytest $SEL $COMMON --zl-out="$W/$name" "$@" | tail -n 2
  echo "$name: rc=${PIPESTATUS[0]} $(( $(date +%s) - t0 )) s"
}
card0() {
  export CUDA_VISIBLE_DEVICES=0
  run r30a 150 --zl-graph-replays=30 --zl-graph-budget-ms=10
  run r30b 150 --zl-graph-replays=30 --zl-graph-budget-ms=10
  run r100a 120 --zl-graph-replays=100 --zl-graph-budget-ms=5
  run r100b 120 --zl-graph-replays=100 --zl-graph-budget-ms=5
}
card1() {
  export CUDA_VISIBLE_DEVICES=1
  run cold1 250 --zl-cold-cache
  run cold2 250 --zl-cold-cache
}
echo "start $(date +%T)"
# the two-card A/B screen that call 4 never reached (its bare wait hung on the log's tee)
OPS="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
t0=$(date +%s)
timeout 150 python3 -m pytest $OPS --zl-ab=DISABLE_MMA_V3=1 --zl-replay-from=$SEED --zl-timeout=120 --level core -p no:cacheprovider -n 2 --zl-devices=0,1 --zl-out="$W/screen2" 2>&1 | tail -n 14
echo "two-card screen wall: $(( $(date +%s) - t0 )) s"
for d in "$W"/screen2/*/r1_?; do python3 -c "import json;d=json.load(open('$d/run_identity.json'));print('$d', d.get('device_ids'), d.get('visible_devices'))"; done
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
N=$REPO/benchmarks/timer_noise.py
python3 $N "graph warm r30=$W/r30a,$W/r30b" "graph warm r100=$W/r100a,$W/r100b" "graph cold=$W/cold1,$W/cold2" 2>&1
echo "end $(date +%T)"
