#!/usr/bin/env bash
# GPU validation, call 20 (nvidia-h200-x2; run as: bash benchmarks/gpu/call20.sh, carry .fg and .whl).
# Written 2026-11-30 (session 12) after calls 18-19. Show 1's selection (abs, mul, sum, fft, mm
# at --level core, the committed seed replayed, 30 x 10 ms), interleaved on each card:
#  P: this build (placements=5, wide rows x10)       card 0: P1 N1 P2 N2
#  N: this build with --zl-graph-placements=1         card 1: P3 B1 P4 B2
#  B: the build before (.whl/before: the primer, no placements, no widening)
# Results: $OUT/call20.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 20
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site_before .whl/before/*.whl .whl/sqlalchemy-*.whl .whl/greenlet-*.whl .whl/pytest_timeout-*.whl || exit 1
LIMIT=420
COMMON="--level core -p no:cacheprovider -q -rfEs --zl-replay-from=$SEED --zl-graph-replays=30 --zl-graph-budget-ms=10"
NOISE="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_sum.py::test_sum
  benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
one() {  # name
  local r=$1 s extra="" path=/tmp/site
  s=$(lim 150) || { echo "$r: skipped, no time left"; return; }
  [ "$s" -lt 100 ] && { echo "$r: skipped, $s s left"; return; }
  case $r in N*) extra="--zl-graph-placements=1";; B*) path=/tmp/site_before;; esac
  local t0; t0=$(date +%s)
  PYTHONPATH=$path timeout -s INT -k 10 "$s" python3 -m pytest $NOISE $COMMON $extra --zl-out="$W/$r" > "$W/$r.log" 2>&1
  echo "$r: rc=$? $(( $(date +%s) - t0 )) s: $(tail -n 1 "$W/$r.log")"
}
card0() { export CUDA_VISIBLE_DEVICES=0; cd .fg; for r in P1 N1 P2 N2; do one $r; done; }
card1() { export CUDA_VISIBLE_DEVICES=1; cd .fg; for r in P3 B1 P4 B2; do one $r; done; }
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
python3 "$REPO/benchmarks/timer_noise.py" "P1 vs P2=$W/P1,$W/P2" "P3 vs P4=$W/P3,$W/P4" \
  "N1 vs N2=$W/N1,$W/N2" "B1 vs B2=$W/B1,$W/B2" 2>&1
grep -h timer_settings "$W"/P1/run_identity.json "$W"/B1/run_identity.json 2>/dev/null | head -2
echo "end $(date +%T)"
