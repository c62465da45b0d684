#!/usr/bin/env bash
# GPU validation, call 2 (nvidia-h200-x2): timer noise. FlagGems v5.3.4, --level core, operators
# abs, mul, sum, fft, mm (their main test function, all default dtypes). Two independent
# processes per timer, configs pinned (run 2 replays run 1's LibTuner database). Card 0: our
# graph timer warm and cold; card 1: our direct timer, FlagGems kernel mode, FlagGems cudagraph.
set -u
W=/tmp/w2; mkdir -p "$W"; REPO=$PWD
exec > >(tee "$W/call2.log") 2>&1
pack() { tar -czf "$OUT/call2.tgz" -C /tmp --exclude='*/triton_cache/*' --exclude='*/code_cache/*' w2; }
trap pack EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
echo "===== pinning re-check: -n 2 --zl-devices=0,1"
(cd benchmarks/gpu/pinning && timeout 120 python3 -m pytest -n 2 --zl-devices=0,1 --zl-out="$W/pin" -p no:cacheprovider -q 2>&1 | tail -8)
cd .fg
SEL="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_sum.py::test_sum benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
COMMON="--level core -p no:cacheprovider -q"
ident() {  # a hand-written identity beside a plain FlagGems log
  printf '{"backend":"cuda","device":"NVIDIA H200","timer":"%s","bench_level":"core","shape_mode":"upstream","tuner_cache":"isolated","direct_repeat":"%s","autotune_mode":"replay"}\n' "$2" "$3" > "$1/run_identity.json"
}
native() {  # native DIR MODEFLAGS... : FlagGems' own timer, tables parsed from stdout
  local dir=$1; shift; mkdir -p "$dir/fg_cache/config_cache"
  cp "$SEED"/flaggems_cache/config_cache/*.db "$dir/fg_cache/config_cache/" 2>/dev/null
  FLAGGEMS_CACHE_DIR="$dir/fg_cache" TRITON_CACHE_DIR="$dir/tc" timeout 300 python3 -m pytest $SEL $COMMON -s "$@" > "$dir/run.log" 2>&1
  echo "$(basename $dir): rc=$? $(grep -c SUCCESS $dir/run.log) rows"
}
card0() {
  export CUDA_VISIBLE_DEVICES=0
  timeout 300 python3 -m pytest $SEL $COMMON --zl-out="$W/warm1"
  timeout 300 python3 -m pytest $SEL $COMMON --zl-out="$W/warm2" --zl-replay-from="$W/warm1"
  timeout 300 python3 -m pytest $SEL $COMMON --zl-out="$W/cold1" --zl-replay-from="$W/warm1" --zl-cold-cache
  timeout 300 python3 -m pytest $SEL $COMMON --zl-out="$W/cold2" --zl-replay-from="$W/warm1" --zl-cold-cache
}
card1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 300 python3 -m pytest $SEL $COMMON --zl-out="$W/direct1" --zl-timer=direct
  timeout 300 python3 -m pytest $SEL $COMMON --zl-out="$W/direct2" --zl-timer=direct --zl-replay-from="$W/direct1"
  SEED="$W/direct1"
  for r in 1 2; do mkdir -p "$W/fgk$r"; native "$W/fgk$r" --mode kernel --warmup 25 --iter 100; ident "$W/fgk$r" direct "flaggems-kernel:warmup=25ms,rep=100ms"; done
  for r in 1 2; do mkdir -p "$W/fgg$r"; native "$W/fgg$r" --mode cudagraph --iter 20; ident "$W/fgg$r" graph "flaggems-cudagraph:rep=20ms"; done
}
echo "start $(date +%T)"
card0 > "$W/card0.log" 2>&1 &
card1 > "$W/card1.log" 2>&1 &
wait
echo "end $(date +%T)"
tail -n 4 "$W/card0.log" "$W/card1.log"
rm -rf "$W"/fg*/tc "$W"/fg*/fg_cache/code_cache
