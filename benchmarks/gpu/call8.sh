#!/usr/bin/env bash
# GPU validation, call 8 (nvidia-h200-x2; run as: bash benchmarks/gpu/call8.sh, carry .fg and .whl).
# Two independent jobs, one per card, each on its own CPU cores (taskset) so that neither's host
# work slows the other's:
#  card 1, cores 0-7, the caliber magnitudes the README table lacks (issue 4): abs and mul with
#    our graph timer at --level core, with the smoke shape file, and at --level comprehensive
#    (bench_level, shape_mode; pair with benchmarks/timer_noise.py); FlagGems' own kernel mode at
#    warmup 25 / rep 100 and at warmup 5 / rep 20, twice each, alternating (direct_repeat:
#    cross-setting deltas against same-setting ones).
#  card 0, cores 8-31, the rest of the operator sample (issue 5, show 2): the functions that
#    call5.sh 1/2 and 2/2 did not finish (benchmarks/gpu/sample_rest.txt), smoke shapes,
#    12 workers, 450 s per test.
# Results: $OUT/call8.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 8
SMOKE=/tmp/site/pytest_zlbench/ops/shapes/smoke.yaml
cd .fg
SEL="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul"
left() { echo $(( 495 - ($(date +%s) - START) )); }
caliber() {
  export CUDA_VISIBLE_DEVICES=1
  for r in core w25a smoke w5a w25b w5b comprehensive; do
    [ "$(left)" -gt 40 ] || { echo "$r: skipped, no time left"; continue; }
    case $r in
      core) opts="--level=core";;
      smoke) opts="--level=core --shape_file=$SMOKE";;
      comprehensive) opts="--level=comprehensive";;
    esac
    case $r in
      core|smoke|comprehensive)
        timeout -s INT "$(left)" taskset -c 0-7 python3 -m pytest $SEL $opts -p no:cacheprovider -q \
          --zl-replay-from=$SEED --zl-graph-replays=30 --zl-graph-budget-ms=10 --zl-out="$W/$r" | tail -n 1;;
      *)
        case $r in w25*) set -- --warmup 25 --iter 100; rep="warmup=25ms,rep=100ms";; *) set -- --warmup 5 --iter 20; rep="warmup=5ms,rep=20ms";; esac
        mkdir -p "$W/$r/fg_cache/config_cache"; cp "$SEED"/flaggems_cache/config_cache/*.db "$W/$r/fg_cache/config_cache/"
        FLAGGEMS_CACHE_DIR="$W/$r/fg_cache" TRITON_CACHE_DIR="$W/$r/tc" timeout -s INT "$(left)" taskset -c 0-7 \
          python3 -m pytest $SEL --level core -p no:cacheprovider -q -s --mode kernel "$@" > "$W/$r/run.log" 2>&1
        printf '{"backend":"cuda","device":"NVIDIA H200","timer":"direct","bench_level":"core","shape_mode":"upstream","tuner_cache":"isolated","direct_repeat":"%s","autotune_mode":"replay"}\n' "$rep" > "$W/$r/run_identity.json"
        rm -rf "$W/$r/tc"; echo "$r: $(grep -c SUCCESS "$W/$r/run.log") rows";;
    esac
    echo "$r done at $(( $(date +%s) - START )) s"
  done
}
rest() {
  export CUDA_VISIBLE_DEVICES=0
  grep -v '^#' "$REPO/benchmarks/gpu/sample_rest.txt" > "$W/sample.txt"
  echo "sample rest: $(wc -l < "$W/sample.txt") functions"
  timeout -s INT -k 20 "$(left)" taskset -c 8-31 python3 -m pytest $(cat "$W/sample.txt") --level core \
    --shape_file="$SMOKE" -n 12 --zl-out="$W/sample" --zl-graph-replays=3 --zl-graph-budget-ms=2 \
    --timeout=450 --junitxml="$W/sample.xml" -p no:cacheprovider -q -rfEs > "$W/sample.log" 2>&1
  echo "rc=$? at $(( $(date +%s) - START )) s"; tail -n 3 "$W/sample.log"
}
echo "start $(date +%T)"
zl_both caliber rest
cat "$W/caliber.log" "$W/rest.log"
N=$REPO/benchmarks/timer_noise.py
python3 $N "level core vs comprehensive=$W/core,$W/comprehensive" "shapes upstream vs smoke=$W/core,$W/smoke" \
  "kernel 25/100 vs 25/100=$W/w25a,$W/w25b" "kernel 5/20 vs 5/20=$W/w5a,$W/w5b" \
  "kernel 25/100 vs 5/20 (a)=$W/w25a,$W/w5a" "kernel 25/100 vs 5/20 (b)=$W/w25b,$W/w5b"
echo "end $(date +%T)"
