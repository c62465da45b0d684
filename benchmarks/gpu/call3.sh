#!/usr/bin/env bash
# GPU validation, call 3 (nvidia-h200-x2; run as: bash benchmarks/gpu/call3.sh, carry .fg and .whl): the A/B screen of DISABLE_MMA_V3=1 over FlagGems abs,
# mul, fft, mm at --level core, every side replaying one pinned LibTuner database (recorded in
# call 2). Card 0: one-card screen; card 1: 4 rounds on mm, then a graph-timer noise re-run with
# more replays. Then the same screen with -n 2 over both cards. Results: $OUT/call3.tgz
set -u
W=/tmp/w3; mkdir -p "$W"; REPO=$PWD; SEED=$REPO/benchmarks/gpu/seed/h200_v5.3.4
exec > >(tee "$W/call3.log") 2>&1
pack() { tar -czf "$OUT/call3.tgz" -C /tmp --exclude='*/triton_cache/*' --exclude='*/code_cache/*' --exclude='*/config_cache/*' w3; }
trap pack EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
cd .fg
OPS="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
AB="--zl-ab=DISABLE_MMA_V3=1 --zl-replay-from=$SEED --zl-timeout=240 --level core -p no:cacheprovider"
one() {
  export CUDA_VISIBLE_DEVICES=0; local t0=$(date +%s)
  timeout 320 python3 -m pytest $OPS $AB --zl-out="$W/screen1"
  echo "one-card screen wall: $(( $(date +%s) - t0 )) s"
}
rounds() {
  export CUDA_VISIBLE_DEVICES=1; local t0=$(date +%s)
  timeout 240 python3 -m pytest benchmark/test_mm.py::test_mm $AB --zl-rounds=4 --zl-out="$W/mm4"
  echo "mm 4 rounds wall: $(( $(date +%s) - t0 )) s"
  SEL="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_sum.py::test_sum benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
  for r in 3 4; do [ $(( $(date +%s) - START )) -lt 200 ] || { echo "skip warm$r: out of time"; continue; }; timeout 110 python3 -m pytest $SEL --level core -p no:cacheprovider -q --zl-out="$W/warm$r" --zl-replay-from="$SEED" --zl-graph-replays=30 --zl-graph-budget-ms=10 | tail -3; done
}
START=$(date +%s); echo "start $(date +%T)"
one > "$W/one.log" 2>&1 &
rounds > "$W/rounds.log" 2>&1 &
wait
echo "parallel part done $(date +%T)"; tail -n 25 "$W/one.log"; tail -n 30 "$W/rounds.log"
unset CUDA_VISIBLE_DEVICES; t0=$(date +%s)
timeout 180 python3 -m pytest $OPS $AB -n 2 --zl-devices=0,1 --zl-out="$W/screen2"
echo "two-card screen wall: $(( $(date +%s) - t0 )) s"
for d in "$W"/screen2/*/r1_A; do python3 -c "import json,sys;d=json.load(open('$d/run_identity.json'));print('$d', d['device_ids'], d['visible_devices'])"; done
echo "end $(date +%T)"
