#!/usr/bin/env bash
# GPU validation, call 11 (nvidia-h200-x2; run as: bash benchmarks/gpu/call11.sh, carry .fg and .whl,
# with .whl/old/ holding the wheel of commit 485d2ac: captures on the calling thread).
# Written 2026-11-30 after call 10.
#  card 0 (timing): (1) does the capture thread change the numbers? abs, mul, sum, fft, mm at
#    --level core, replaying the committed seed, 30 x 10 ms, four runs interleaved: old, new,
#    old, new (old = 485d2ac, new = this commit); (2) the in-process step of offset_probe.py
#    (call 10: 0.95 -> 1.12 us from the fourth measurement on, in 51 of 51 processes) with the
#    card's SM clock, power and P-state logged every 50 ms by nvidia-smi.
#  card 1 (not timed): cholesky_solve and cholesky_solve_out under the default timer (now in
#    ops/no_capture.yaml); linalg_lu_factor_ex_out and upsample_bicubic2d_aa_backward with all
#    the call's time (call 10: still compiling Triton kernels at 150 s).
# Results: $OUT/call11.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 11
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site_old .whl/old/*.whl \
  .whl/pytest_timeout-*.whl .whl/sqlalchemy-*.whl .whl/greenlet-*.whl 2>/dev/null || exit 1
SMOKE=/tmp/site/pytest_zlbench/ops/shapes/smoke.yaml
cd .fg
LIMIT=480
COMMON="--level core -p no:cacheprovider -q -rfEs"
NOISE="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_sum.py::test_sum
  benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
card0() {
  export CUDA_VISIBLE_DEVICES=0
  for r in old1 new1 old2 new2; do
    s=$(lim 100) || { echo "$r: skipped, no time left"; continue; }
    site=/tmp/site; [ "${r#old}" != "$r" ] && site=/tmp/site_old
    PYTHONPATH=$site timeout -s INT -k 10 "$s" python3 -m pytest $NOISE $COMMON --zl-replay-from=$SEED \
      --zl-graph-replays=30 --zl-graph-budget-ms=10 --zl-out="$W/$r" | tail -n 1
  done
  python3 "$REPO/benchmarks/timer_noise.py" "old: main-thread capture=$W/old1,$W/old2" \
    "new: capture thread=$W/new1,$W/new2" "old1 vs new1=$W/old1,$W/new1" "old2 vs new2=$W/old2,$W/new2"
  nvidia-smi -i 0 --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate,temperature.gpu \
    --format=csv,noheader -lms 50 > "$W/clocks.csv" 2>&1 &
  local smi=$!
  i=0
  while [ "$(left)" -gt 20 ] && [ $i -lt 8 ]; do
    echo "{\"start\": \"$(date +%T.%N)\"}"
    timeout 40 python3 "$REPO/benchmarks/gpu/offset_probe.py" fixed 8 2>/dev/null | \
      while read -r line; do echo "${line%\}}, \"at\": \"$(date +%T.%N)\"}"; done
    sleep 2
    i=$((i + 1))
  done > "$W/offset_clock.jsonl"
  kill "$smi"
  echo "offset probe with clocks: $i processes, $(wc -l < "$W/clocks.csv") clock samples"
}
card1() {
  export CUDA_VISIBLE_DEVICES=1
  local pids=()
  for f in benchmark/test_linalg_lu_factor_ex.py::test_linalg_lu_factor_ex_out \
      benchmark/test_upsample_bicubic2d_aa.py::test_upsample_bicubic2d_aa_backward; do
    n=${f#*::}
    timeout -s INT -k 10 "$(lim 470)" python3 -m pytest "$f" $COMMON --shape_file=$SMOKE --timeout=455 \
      --timeout-method=thread --zl-out="$W/rest_$n" --junitxml="$W/rest_$n.xml" > "$W/rest_$n.log" 2>&1 &
    pids+=($!)
  done
  for n in cholesky_solve cholesky_solve_out; do
    s=$(lim 200) || { echo "$n: skipped, no time left"; continue; }
    timeout -s INT -k 10 "$s" python3 -m pytest "benchmark/test_cholesky_solve.py::test_$n" $COMMON \
      --zl-out="$W/$n" --junitxml="$W/$n.xml" > "$W/$n.log" 2>&1
    echo "$n: rc=$? $(tail -n 1 "$W/$n.log")"
  done
  wait "${pids[@]}"
  for f in "$W"/rest_*.log; do echo "$(basename "$f"): $(tail -n 1 "$f")"; done
}
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
echo "end $(date +%T)"
