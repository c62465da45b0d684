#!/usr/bin/env bash
# GPU validation, call 15 (nvidia-h200-x2; run as: bash benchmarks/gpu/call15.sh, carry .fg and .whl).
# Written 2026-11-30 after call 14. The timer's primer now captures, replays and releases its 8
# one-call graphs one at a time on the capture thread, before the timed graph is captured.
#  card 0: more show-1 noise runs with this build (new5..new8), as call 14.
#  card 1: the capture paths under this build: the fatal check in one process and under xdist
#    (-n 1: the worker restarts, the next test measures), nonzero and unique (fallback rows),
#    linalg_eigvals (a capture that breaks its thread), cholesky_solve_out (ops/no_capture.yaml),
#    and abs with --zl-cold-cache (the primer in cold mode).
# Results: $OUT/call15.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 15
SMOKE=/tmp/site/pytest_zlbench/ops/shapes/smoke.yaml
LIMIT=300
COMMON="--level core -p no:cacheprovider -q -rfEs"
NOISE="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_sum.py::test_sum
  benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
card0() {
  export CUDA_VISIBLE_DEVICES=0
  cd .fg
  for r in new5 new6 new7 new8; do
    s=$(lim 110) || { echo "$r: skipped, no time left"; continue; }
    [ "$s" -lt 90 ] && { echo "$r: skipped, $s s left"; continue; }
    python3 -m pytest $NOISE $COMMON --zl-replay-from=$SEED --zl-graph-replays=30 \
      --zl-graph-budget-ms=10 --zl-out="$W/$r" | tail -n 1
  done
}
step() {  # name timeout command...
  local name=$1 t=$2; shift 2
  local s; s=$(lim "$t") || { echo "$name: skipped, no time left"; return; }
  timeout -s INT -k 10 "$s" "$@" > "$W/$name.log" 2>&1
  echo "$name: rc=$? $(tail -n 1 "$W/$name.log")"
}
card1() {
  export CUDA_VISIBLE_DEVICES=1
  (cd benchmarks/gpu/fatal && step fatal_one 60 python3 -m pytest --zl-out="$W/fatal_one" -p no:cacheprovider -q -rfE)
  (cd benchmarks/gpu/fatal && step fatal_xdist 90 python3 -m pytest -n 1 --zl-out="$W/fatal_xdist" -p no:cacheprovider -q -rfE)
  cd .fg
  step cold 60 python3 -m pytest benchmark/test_abs.py::test_abs $COMMON --dtypes float16 --zl-cold-cache --zl-out="$W/cold"
  step eigvals 60 python3 -m pytest benchmark/test_linalg_eigvals.py::test_linalg_eigvals $COMMON \
    --shape_file=$SMOKE --zl-out="$W/eigvals"
  step chol_out 60 python3 -m pytest benchmark/test_cholesky_solve.py::test_cholesky_solve_out $COMMON --zl-out="$W/chol_out"
  step fallback 110 python3 -m pytest benchmark/test_nonzero.py benchmark/test_unique.py $COMMON --zl-out="$W/fallback"
  for d in fatal_one fatal_xdist cold eigvals chol_out fallback; do
    [ -f "$W/$d/rows.jsonl" ] || { echo "$d: no rows.jsonl"; continue; }
    python3 - "$W/$d/rows.jsonl" "$d" <<'PY'
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
kinds = collections.Counter((r["op"], r["timer"], (r.get("fallback") or "")[:70]) for r in rows)
print(f"{sys.argv[2]}: {len(rows)} rows")
for (op, timer, why), n in sorted(kinds.items()):
    print(f"  {n:4d} {op} {timer} {why}")
PY
  done
}
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
python3 "$REPO/benchmarks/timer_noise.py" "new5 vs new6=$W/new5,$W/new6" "new7 vs new8=$W/new7,$W/new8"
echo "end $(date +%T)"
