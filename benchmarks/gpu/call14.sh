#!/usr/bin/env bash
# GPU validation, call 14 (nvidia-h200-x2; run as: bash benchmarks/gpu/call14.sh, carry .fg and .whl,
# with .whl/old/ holding the wheel of the commit before the primer: the timer of calls 10-13).
# Written 2026-11-30 after calls 12-13: graphs replay in one of two device states (64x64 abs
# 0.92 / 1.10 us), the faster one for a process's first three graphs and again after idle gaps,
# a global state (a graph kept from the start steps with the new ones). The new timer captures
# 8 one-call "primer" graphs of the op and replays them right before its timed replays.
#  card 0: the show-1 noise pair, old against new: abs, mul, sum, fft, mm at --level core, every
#    run replaying the committed seed, 30 replays x 10 ms, four runs interleaved old, new, old, new.
#  card 1: (1) offset_probe.py with and without the primer, with and without 500 ms idle gaps
#    (the gaps brought the fast state back in call 12); (2) a second new pair, new3 and new4.
# Results: $OUT/call14.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 14
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site_old .whl/old/*.whl \
  .whl/pytest_timeout-*.whl .whl/sqlalchemy-*.whl .whl/greenlet-*.whl 2>/dev/null || exit 1
cd .fg
LIMIT=420
COMMON="--level core -p no:cacheprovider -q -rfEs"
NOISE="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_sum.py::test_sum
  benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
noise() {  # run-name...
  for r in "$@"; do
    s=$(lim 110) || { echo "$r: skipped, no time left"; continue; }
    site=/tmp/site; [ "${r#old}" != "$r" ] && site=/tmp/site_old
    start=$(date +%s)
    PYTHONPATH=$site timeout -s INT -k 10 "$s" python3 -m pytest $NOISE $COMMON --zl-replay-from=$SEED \
      --zl-graph-replays=30 --zl-graph-budget-ms=10 --zl-out="$W/$r" | tail -n 1
    echo "$r: $(( $(date +%s) - start )) s"
  done
}
card0() {
  export CUDA_VISIBLE_DEVICES=0
  noise old1 new1 old2 new2
}
PROBE="$REPO/benchmarks/gpu/offset_probe.py"
probe() {  # label probe-args...
  local label=$1; shift
  timeout 60 python3 "$PROBE" --label "c1 $label" "$@" 2>>"$W/probe_c1.err"
}
card1() {
  export CUDA_VISIBLE_DEVICES=1
  for r in 1 2 3; do
    probe base fixed 8
    probe primer8 fixed 8 --primer 8
    probe sleep fixed 6 --sleep-ms 500
    probe primer8-sleep fixed 6 --primer 8 --sleep-ms 500
    probe primer4-sleep fixed 6 --primer 4 --sleep-ms 500
  done >> "$W/probe_c1.jsonl"
  echo "probes: $(wc -l < "$W/probe_c1.jsonl") lines; errors: $(grep -c . "$W/probe_c1.err")"
  python3 "$REPO/benchmarks/gpu/offset_report.py" "$W/probe_c1.jsonl"
  noise new3 new4
}
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
python3 "$REPO/benchmarks/timer_noise.py" "old (no primer)=$W/old1,$W/old2" "new (primer 8)=$W/new1,$W/new2" \
  "new3 vs new4 (card 1)=$W/new3,$W/new4" "old1 vs new1=$W/old1,$W/new1" "old2 vs new2=$W/old2,$W/new2"
echo "end $(date +%T)"
