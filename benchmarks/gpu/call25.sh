#!/usr/bin/env bash
# GPU validation, call 25 (nvidia-h200-x2; run as: bash benchmarks/gpu/call25.sh, carry .fg and .whl).
# Written 2026-11-30 (session 12), the session's last build (a040969): the run summary's two
# new lines on the H200.
#  card 0: FlagGems' test_mm at core (seed replayed, 30 x 10 ms): the unsteady-measurements line.
#  card 1: SIGINT to a recorded run at 20 s: the partial-rows line in its reviewed wording.
# Results: $OUT/call25.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 25
LIMIT=120
COMMON="--level core -p no:cacheprovider -q -rfEs --zl-replay-from=$SEED"
card0() {
  export CUDA_VISIBLE_DEVICES=0
  cd .fg
  timeout -s INT -k 10 90 python3 -m pytest benchmark/test_mm.py::test_mm $COMMON --zl-graph-replays=30 \
    --zl-graph-budget-ms=10 --zl-out="$W/mm" > "$W/mm.log" 2>&1
  echo "mm: rc=$?"; sed -n '/zlbench run summary/,$p' "$W/mm.log"
}
card1() {
  export CUDA_VISIBLE_DEVICES=1
  cd .fg
  setsid python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
    python3 -m pytest benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul $COMMON \
    --zl-out="$W/int_one" > "$W/int_one.log" 2>&1 &
  local pid=$!
  sleep 20; kill -INT -- -"$pid" 2>/dev/null; wait "$pid"
  echo "int_one: rc=$?; $(cd "$W/int_one" && ls -A | tr '\n' ' ')"
  sed -n '/zlbench run summary/,$p' "$W/int_one.log" | grep -v "^  "
}
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
echo "end $(date +%T)"
