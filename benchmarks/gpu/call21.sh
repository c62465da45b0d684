#!/usr/bin/env bash
# GPU validation, call 21 (nvidia-h200-x2; run as: bash benchmarks/gpu/call21.sh, carry .fg and .whl).
# Written 2026-11-30 (session 12) after call 20, with the build of 1028e22 (placements and
# widening reverted: the same timer as calls 15-17).
#  card 0: show 1's noise pair B3, B4 (the final build, as call 20's B1, B2 on card 1).
#  card 1: what was tested on CPU only: the xdist fold in its final form (fatal under -n 1),
#    a run killed with SIGKILL in one process and under xdist (-n 2), a run interrupted with
#    SIGINT; then what --zl-compare says about each.
# Results: $OUT/call21.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 21
LIMIT=240
COMMON="--level core -p no:cacheprovider -q -rfEs --zl-replay-from=$SEED"
NOISE="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_sum.py::test_sum
  benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
card0() {
  export CUDA_VISIBLE_DEVICES=0
  cd .fg
  for r in B3 B4; do
    s=$(lim 110) || { echo "$r: skipped"; continue; }
    [ "$s" -lt 90 ] && { echo "$r: skipped, $s s left"; continue; }
    timeout -s INT -k 10 "$s" python3 -m pytest $NOISE $COMMON --zl-graph-replays=30 \
      --zl-graph-budget-ms=10 --zl-out="$W/$r" > "$W/$r.log" 2>&1
    echo "$r: rc=$? $(tail -n 1 "$W/$r.log")"
  done
}
killed() {  # name signal seconds extra-args...: a recorded run of abs and mul, signalled after SECONDS
  local name=$1 sig=$2 secs=$3; shift 3
  setsid python3 -m pytest benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul \
    $COMMON "$@" --zl-out="$W/$name" > "$W/$name.log" 2>&1 &
  local pid=$!
  sleep "$secs"
  kill -"$sig" -- -"$pid" 2>/dev/null
  wait "$pid"; echo "$name: rc=$? after $sig at ${secs}s; files: $(cd "$W/$name" && ls -A | tr '\n' ' ')"
  for f in "$W/$name"/rows*.jsonl; do [ -f "$f" ] && echo "   $(basename "$f"): $(wc -l < "$f") rows"; done
  tail -n 2 "$W/$name.log" | sed 's/^/   log: /'
  (cd /tmp && python3 -m pytest --noconftest -p no:cacheprovider --zl-compare="$W/$name" \
     --zl-compare="$W/ref" --zl-out="$W/cmp_$name" > "$W/cmp_$name.log" 2>&1
   echo "   compare: rc=$? $(grep -m1 -E "ERROR|error" "$W/cmp_$name.log")")
}
card1() {
  export CUDA_VISIBLE_DEVICES=1
  (cd benchmarks/gpu/fatal && timeout -s INT -k 5 90 python3 -m pytest -n 1 --zl-out="$W/fatal_xdist" \
     -p no:cacheprovider -q -rfE --junitxml="$W/fatal_xdist.xml" > "$W/fatal_xdist.log" 2>&1
   echo "fatal_xdist: rc=$? $(tail -n 1 "$W/fatal_xdist.log")"
   grep -o 'tests="[0-9]*" \|failures="[0-9]*"\|errors="[0-9]*"' "$W/fatal_xdist.xml" | tr '\n' ' '; echo
   cat "$W/fatal_xdist/rows.jsonl")
  cd .fg
  python3 -m pytest benchmark/test_abs.py::test_abs $COMMON --dtypes float16 --zl-out="$W/ref" > "$W/ref.log" 2>&1
  echo "ref: rc=$? $(tail -n 1 "$W/ref.log")"
  killed kill_one KILL 25
  killed kill_xdist KILL 40 -n 2
  killed int_one INT 25
}
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
python3 "$REPO/benchmarks/timer_noise.py" "B3 vs B4=$W/B3,$W/B4" 2>&1
echo "end $(date +%T)"
