#!/usr/bin/env bash
# GPU validation, call 9 (nvidia-h200-x2; run as: bash benchmarks/gpu/call9.sh, carry .fg and .whl).
# Written 2026-11-30. The seven operators the 2026-11-29 sample left without rows or a dismissal
# (docs/VALIDATION.md, issue 5 show 2), the backend caliber axis (issue 4) and issue 3's probes.
#  card 0: (1) the three functions never reached (linalg_lu_factor_ex_out, triu_,
#    upsample_bicubic2d_aa_backward); (2) the backend caliber axis: abs and mul at --level core
#    recorded with --zl-backend=cpu (the host clock, what a run mislabelled cpu would hold)
#    against cuda, paired with benchmarks/timer_noise.py; (3) plain triton.autotune record /
#    replay on vector_norm (the replay should tune nothing); (4) with the time left,
#    benchmarks/gpu/offset_probe.py in fresh processes (abs 64x64 fp16 after pads of 0-144 MB).
#  card 1: hadamard_transform_mn in the background for the whole call, with the direct timer (its
#    baseline builds a scipy Hadamard matrix of up to 32768^2 doubles on the host at every call);
#    benchmarks/gpu/capture_probe.py (what an aborted capture breaks, and whether a fresh thread
#    escapes it) for eigvals and cholesky_solve; then linalg_eigvals, cholesky_solve and
#    cholesky_solve_out under our graph timer and under --zl-timer=direct, a process each.
# Results: $OUT/call9.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 9
SMOKE=/tmp/site/pytest_zlbench/ops/shapes/smoke.yaml
cd .fg
LIMIT=540
COMMON="--level core --shape_file=$SMOKE -p no:cacheprovider -q -rfEs --zl-graph-replays=3 --zl-graph-budget-ms=2"
SOLVERS="benchmark/test_linalg_eigvals.py::test_linalg_eigvals benchmark/test_cholesky_solve.py::test_cholesky_solve
  benchmark/test_cholesky_solve.py::test_cholesky_solve_out"
REST="benchmark/test_linalg_lu_factor_ex.py::test_linalg_lu_factor_ex_out benchmark/test_triu.py::test_triu_inplace
  benchmark/test_upsample_bicubic2d_aa.py::test_upsample_bicubic2d_aa_backward"
card0() {
  export CUDA_VISIBLE_DEVICES=0
  if s=$(lim 240); then
    timeout -s INT -k 10 "$s" python3 -m pytest $REST $COMMON -n 3 --zl-out="$W/rest" \
      --junitxml="$W/rest.xml" > "$W/rest.log" 2>&1
    echo "rest: rc=$? $(tail -n 1 "$W/rest.log")"
  fi
  for b in cuda cpu; do
    s=$(lim 90) || { echo "backend $b: skipped, no time left"; continue; }
    timeout -s INT -k 10 "$s" python3 -m pytest benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul \
      --level core -p no:cacheprovider -q --zl-backend=$b --zl-replay-from=$SEED --zl-out="$W/backend_$b" | tail -n 1
  done
  python3 "$REPO/benchmarks/timer_noise.py" "backend cuda vs cpu=$W/backend_cuda,$W/backend_cpu"
  # plain triton.autotune pinning (vector_norm's kernels): the replay should print no tuning
  for m in rec rep; do
    s=$(lim 120) || { echo "vector_norm $m: skipped, no time left"; continue; }
    extra=""; [ "$m" = rep ] && extra="--zl-replay-from=$W/vnorm_rec"
    timeout -s INT -k 10 "$s" python3 -m pytest benchmark/test_vector_norm.py::test_vector_norm $COMMON \
      --zl-out="$W/vnorm_$m" $extra | tail -n 1
    echo "vector_norm $m: $(grep -c 'Triton autotuning for function' "$W/vnorm_$m/run.log") tunings printed;" \
      "autotune.json: $(grep -o '"(' "$W/vnorm_$m/autotune.json" 2>/dev/null | wc -l) keys"
  done
  for i in $(seq 1 24); do
    [ "$(left)" -gt 15 ] || break
    timeout 30 python3 "$REPO/benchmarks/gpu/offset_probe.py" $(( (i % 4) * 48 )) 2>/dev/null | tail -n 1
  done > "$W/offset_probe.jsonl"
  echo "offset probe: $(wc -l < "$W/offset_probe.jsonl") processes"
}
card1() {
  export CUDA_VISIBLE_DEVICES=1
  # hadamard_transform_mn in the background for the whole call (mostly host work: scipy)
  timeout -s INT -k 10 "$(lim 530)" python3 -m pytest benchmark/test_hadamard_transform.py::test_hadamard_transform_mn \
    $COMMON --zl-timer=direct --zl-out="$W/hadamard" --junitxml="$W/hadamard.xml" > "$W/hadamard.log" 2>&1 &
  local had=$!
  # what an aborted capture breaks, one process per case
  for op in eigvals chol_torch chol_gems; do
    for where in main thread; do
      PYTHONPATH=/tmp/site:$PWD/src timeout 60 python3 "$REPO/benchmarks/gpu/capture_probe.py" $op $where 2> "$W/probe_${op}_$where.err"
      echo "{\"probe\": \"$op $where\", \"rc\": $?}"
    done
  done > "$W/capture_probe.jsonl"
  for t in graph direct; do
    # one process per test, so that a crash names its test
    for f in $SOLVERS; do
      n=${f#*::}
      s=$(lim 100) || { echo "$t $n: skipped, no time left"; continue; }
      timeout -s INT -k 10 "$s" python3 -m pytest "$f" $COMMON --zl-timer=$t --zl-out="$W/solver_${t}_$n" \
        --junitxml="$W/solver_${t}_$n.xml" > "$W/solver_${t}_$n.log" 2>&1
      echo "$t $n: rc=$? $(tail -n 1 "$W/solver_${t}_$n.log")"
    done
  done
  wait "$had"
  echo "hadamard_transform_mn: rc=$? at $(( $(date +%s) - START )) s $(tail -n 1 "$W/hadamard.log")"
  grep -c "SUCCESS\|DIRECT" "$W/hadamard.log"
}
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
cat "$W/capture_probe.jsonl" "$W/offset_probe.jsonl"
echo "end $(date +%T)"
