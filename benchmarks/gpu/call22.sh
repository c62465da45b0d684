#!/usr/bin/env bash
# GPU validation, call 22 (nvidia-h200-x2; run as: bash benchmarks/gpu/call22.sh, carry .fg and .whl).
# Written 2026-11-30 (session 12) after call 21.
#  card 0: benchmarks/gpu/gemm_probe.py (every replay of a 10 ms GEMM graph over 1.5 s bursts
#    after 1 s idle) with nvidia-smi every 20 ms: the transient behind mm 4096's spread.
#  card 1: call 21's two kills that did not test what they meant to: the xdist run killed at
#    20 s (call 21's finished at 31 s, before its 40 s kill), and SIGINT to a run whose SIGINT
#    is not ignored (call 21 started it in the background of a non-interactive shell, where
#    SIGINT is ignored: pytest never saw it, while gcc, compiling a Triton launcher, died of it).
# Results: $OUT/call22.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 22
LIMIT=150
COMMON="--level core -p no:cacheprovider -q -rfEs --zl-replay-from=$SEED"
card0() {
  export CUDA_VISIBLE_DEVICES=0
  nvidia-smi -i 0 --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,noheader -lms 20 > "$W/smi0.csv" 2>&1 &
  local smi=$!
  timeout -s INT 80 python3 benchmarks/gpu/gemm_probe.py > "$W/gemm.jsonl" 2> "$W/gemm.err"
  echo "gemm: rc=$?"
  kill "$smi"
}
killed() {  # name signal seconds extra-args...
  local name=$1 sig=$2 secs=$3; shift 3
  # SIGINT back to its default first: a background job of a non-interactive shell ignores it
  setsid python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
    python3 -m pytest benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul \
    $COMMON "$@" --zl-out="$W/$name" > "$W/$name.log" 2>&1 &
  local pid=$!
  sleep "$secs"
  kill -"$sig" -- -"$pid" 2>/dev/null
  wait "$pid"; echo "$name: rc=$? after $sig at ${secs}s; files: $(cd "$W/$name" && ls -A | tr '\n' ' ')"
  for f in "$W/$name"/rows*.jsonl; do [ -f "$f" ] && echo "   $(basename "$f"): $(wc -l < "$f") rows"; done
  tail -n 3 "$W/$name.log" | sed 's/^/   log: /'
  (cd /tmp && python3 -m pytest --noconftest -p no:cacheprovider --zl-compare="$W/$name" \
     --zl-compare="$W/$name" --zl-out="$W/cmp_$name" > "$W/cmp_$name.log" 2>&1
   echo "   compare: rc=$? $(grep -m1 -E "ERROR" "$W/cmp_$name.log")")
}
card1() {
  export CUDA_VISIBLE_DEVICES=1
  cd .fg
  killed kill_xdist KILL 20 -n 2
  killed int_one INT 20
}
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
tail -n 3 "$W/gemm.err"
python3 - "$W/gemm.jsonl" <<'PY'
import json, statistics as st, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    us = r["us"]
    q = len(us) // 10 or 1
    parts = [st.median(us[i:i + q]) for i in range(0, len(us), q)]
    print(f"{r['dtype']:8} {r['n']} burst {r['burst']} ({len(us)} replays of {r['calls']} calls): "
          f"first 5 {' '.join(f'{v:.1f}' for v in us[:5])} | tenths {' '.join(f'{v:.1f}' for v in parts)}")
PY
echo "end $(date +%T)"
