#!/usr/bin/env bash
# GPU validation, call 24 (nvidia-h200-x2; run as: bash benchmarks/gpu/call24.sh, carry .fg and .whl).
# Written 2026-11-30 (session 12), the final build of the session (primer timer; the interrupted
# run's summary names its partial rows).
#  card 0: show 1's noise pair B7, B8.
#  card 1: a recorded xdist run (-n 2) killed with SIGKILL at 35 s, after rows were measured
#    (call 22's kill came before any); SIGINT to a one-process run at 20 s (the new summary).
# Results: $OUT/call24.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 24
LIMIT=200
COMMON="--level core -p no:cacheprovider -q -rfEs --zl-replay-from=$SEED"
NOISE="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_sum.py::test_sum
  benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
card0() {
  export CUDA_VISIBLE_DEVICES=0
  cd .fg
  for r in B7 B8; do
    s=$(lim 100) || { echo "$r: skipped"; continue; }
    [ "$s" -lt 80 ] && { echo "$r: skipped, $s s left"; continue; }
    timeout -s INT -k 10 "$s" python3 -m pytest $NOISE $COMMON --zl-graph-replays=30 \
      --zl-graph-budget-ms=10 --zl-out="$W/$r" > "$W/$r.log" 2>&1
    echo "$r: rc=$? $(tail -n 1 "$W/$r.log")"
  done
}
killed() {  # name signal seconds extra-args...
  local name=$1 sig=$2 secs=$3; shift 3
  # SIGINT back to its default first: a background job of a non-interactive shell ignores it
  setsid python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
    python3 -m pytest benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul \
    benchmark/test_sum.py::test_sum $COMMON "$@" --zl-out="$W/$name" > "$W/$name.log" 2>&1 &
  local pid=$!
  sleep "$secs"
  kill -"$sig" -- -"$pid" 2>/dev/null
  wait "$pid"; echo "$name: rc=$? after $sig at ${secs}s; files: $(cd "$W/$name" && ls -A | tr '\n' ' ')"
  for f in "$W/$name"/rows*.jsonl; do [ -f "$f" ] && echo "   $(basename "$f"): $(wc -l < "$f") rows"; done
  grep -E "zlbench|no finished|no rows|passed|failed|Interrupt" "$W/$name.log" | tail -n 5 | sed 's/^/   log: /'
  (cd /tmp && python3 -m pytest --noconftest -p no:cacheprovider --zl-compare="$W/$name" \
     --zl-compare="$W/$name" --zl-out="$W/cmp_$name" > "$W/cmp_$name.log" 2>&1
   echo "   compare: rc=$? $(head -n 2 "$W/cmp_$name.log" | tr '\n' ' ')")
}
card1() {
  export CUDA_VISIBLE_DEVICES=1
  cd .fg
  killed kill_xdist KILL 35 -n 2
  killed int_one INT 20
}
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
python3 "$REPO/benchmarks/timer_noise.py" "B7 vs B8=$W/B7,$W/B8" 2>&1
echo "end $(date +%T)"
