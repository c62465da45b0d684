#!/usr/bin/env bash
# GPU validation, call 4 (nvidia-h200-x2; run as: bash benchmarks/gpu/call4.sh, carry .fg and .whl):
# the A/B screen of DISABLE_MMA_V3=1 over FlagGems abs, mul, fft, mm at --level core, every side
# replaying one pinned LibTuner database (benchmarks/gpu/seed, recorded in call 2).
# Card 0: the one-card screen; card 1 at the same time: 4 rounds on mm. Then the same screen
# with -n 2 --zl-devices=0,1. (Its first try, call 3, measured nothing; that script is in git
# history. As run on 2026-11-29 this script waited with a bare `wait` and hung after the parallel
# part; it now uses zl_both.)
# Results: $OUT/call4.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 4
cd .fg
OPS="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
AB="--zl-ab=DISABLE_MMA_V3=1 --zl-replay-from=$SEED --zl-timeout=200 --level core -p no:cacheprovider"
one() {
  export CUDA_VISIBLE_DEVICES=0; local t0=$(date +%s)
  timeout 330 python3 -m pytest $OPS $AB --zl-out="$W/screen1"
  echo "rc=$? one-card screen wall: $(( $(date +%s) - t0 )) s"
}
rounds() {
  export CUDA_VISIBLE_DEVICES=1; local t0=$(date +%s)
  timeout 330 python3 -m pytest benchmark/test_mm.py::test_mm $AB --zl-rounds=4 --zl-out="$W/mm4"
  echo "rc=$? mm 4 rounds wall: $(( $(date +%s) - t0 )) s"
}
echo "start $(date +%T)"
zl_both one rounds
echo "parallel part done $(date +%T)"; tail -n 30 "$W/one.log"; tail -n 30 "$W/rounds.log"
unset CUDA_VISIBLE_DEVICES; t0=$(date +%s)
timeout 200 python3 -m pytest $OPS $AB -n 2 --zl-devices=0,1 --zl-out="$W/screen2"
echo "rc=$? two-card screen wall: $(( $(date +%s) - t0 )) s"
for d in "$W"/screen2/*/r1_A; do python3 -c "import json;d=json.load(open('$d/run_identity.json'));print('$d', d.get('device_ids'), d.get('visible_devices'), d.get('device'))"; done
echo "end $(date +%T)"
