#!/usr/bin/env bash
# GPU validation, call 8 (nvidia-h200-x2; run as: bash benchmarks/gpu/call8.sh, carry .fg and .whl):
# NOT RUN YET (written 2026-11-29 for the next session). The caliber magnitudes the README table
# still lacks (issue 4) and a probe of the per-process offset of microsecond rows (issue 3).
# Card 0: abs and mul at --level core, at --level comprehensive, and with the smoke shape file
# (bench_level, shape_mode: pair with benchmarks/timer_noise.py). Card 1: FlagGems' own kernel
# mode twice at warmup 25 / rep 100 and twice at warmup 5 / rep 20 (direct_repeat: cross-setting
# against same-setting deltas), then benchmarks/gpu/offset_probe.py in 16 fresh processes.
# Results: $OUT/call8.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 8
SMOKE=/tmp/site/pytest_zlbench/ops/shapes/smoke.yaml
cd .fg
SEL="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul"
left() { echo $(( 560 - ($(date +%s) - START) )); }
card0() {
  export CUDA_VISIBLE_DEVICES=0
  for v in "core:--level=core" "comprehensive:--level=comprehensive" "smoke:--level=core --shape_file=$SMOKE"; do
    name=${v%%:*}; opts=${v#*:}
    [ "$(left)" -gt 60 ] || { echo "$name: skipped"; continue; }
    timeout -s INT "$(left)" python3 -m pytest $SEL $opts -p no:cacheprovider -q --zl-replay-from=$SEED \
      --zl-graph-replays=30 --zl-graph-budget-ms=10 --zl-out="$W/$name" | tail -n 1
  done
}
card1() {
  export CUDA_VISIBLE_DEVICES=1
  for r in w25a w25b w5a w5b; do
    [ "$(left)" -gt 120 ] || { echo "$r: skipped"; continue; }
    case $r in w25*) set -- --warmup 25 --iter 100; rep="warmup=25ms,rep=100ms";; *) set -- --warmup 5 --iter 20; rep="warmup=5ms,rep=20ms";; esac
    mkdir -p "$W/$r/fg_cache/config_cache"; cp "$SEED"/flaggems_cache/config_cache/*.db "$W/$r/fg_cache/config_cache/"
    FLAGGEMS_CACHE_DIR="$W/$r/fg_cache" TRITON_CACHE_DIR="$W/$r/tc" timeout 150 python3 -m pytest $SEL --level core \
      -p no:cacheprovider -q -s --mode kernel "$@" > "$W/$r/run.log" 2>&1
    printf '{"backend":"cuda","device":"NVIDIA H200","timer":"direct","bench_level":"core","shape_mode":"upstream","tuner_cache":"isolated","direct_repeat":"%s","autotune_mode":"replay"}\n' "$rep" > "$W/$r/run_identity.json"
    rm -rf "$W/$r/tc"; echo "$r: $(grep -c SUCCESS "$W/$r/run.log") rows"
  done
  for i in $(seq 1 16); do
    [ "$(left)" -gt 20 ] || break
    python3 "$REPO/benchmarks/gpu/offset_probe.py" $(( (i % 4) * 48 )) 2>/dev/null | tail -n 1
  done > "$W/offset_probe.jsonl"
  echo "offset probe: $(wc -l < "$W/offset_probe.jsonl") processes"
}
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
N=$REPO/benchmarks/timer_noise.py
python3 $N "level core vs comprehensive=$W/core,$W/comprehensive" "shapes upstream vs smoke=$W/core,$W/smoke" \
  "kernel 25/100 vs 25/100=$W/w25a,$W/w25b" "kernel 5/20 vs 5/20=$W/w5a,$W/w5b" "kernel 25/100 vs 5/20=$W/w25a,$W/w5a"
cat "$W/offset_probe.jsonl"
echo "end $(date +%T)"
