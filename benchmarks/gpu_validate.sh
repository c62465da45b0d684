#!/usr/bin/env bash
# GPU validation of pytest-zlbench against FlagGems' own benchmark suite: reproduces the tables of
# docs/VALIDATION.md and docs/PERFORMANCE.md and the caliber table of the README.
#
# Run it from a FlagGems checkout (one whose pytest.ini puts src/ on the path; v5.3.4 is the one
# the docs used) on a CUDA machine where pytest-zlbench is installed:
#
#   cd FlagGems && bash /path/to/pytest-zlbench/benchmarks/gpu_validate.sh [OPTIONS] STAGE...
#
# Environment: DTYPES (e.g. float16) restricts every stage to those dtypes (FlagGems' --dtypes),
# but for the tests of OWN_DTYPES (default fft, which takes complex64 only): the screens measure
# those apart on their own dtypes (a screen would measure them after its batch, in side workers
# of their own);
# SCREEN_MODES (lockstep) the screen modes aa3 and cost run, e.g. "lockstep one-process process";
# ZL_TIMER (e.g. kernel) the --zl-timer of every screen (aa3, mma, rlc, crash, cost, scale and
# cards).
# SHARED_INPUTS=1 adds --zl-shared-inputs to those screens (lockstep only).
# SCREEN_ARGS: more options for those screens, split on spaces (e.g. "--zl-graph-budget-ms=200":
# every graph of a microsecond op then holds the 2000 calls a graph holds at most, 500 in
# one-process mode).
# RUN_TIMEOUT (900) bounds each recorded run and screen (SIGINT, then SIGKILL 30 s later);
# DEADLINE (seconds since the epoch, e.g. $(( $(date +%s) + 540 ))) bounds them all: each gets
# what is left of it, and one with less than 20 s left is not started (a lent machine's one
# command; leave 30 s after it for a run's SIGKILL and the summaries).
#
# Options:
#   -o DIR       output folder (default ./zl_validate); every stage writes DIR/<stage>/ and
#                refuses to run when that folder exists; the console is also in DIR/validate.log
#   --seed DIR   a recorded run (or a folder holding flaggems_cache/config_cache/*.db) whose
#                LibTuner configs every timing stage replays; default DIR/seed, recorded by the
#                seed stage when it is missing
#   --pack       at the end, DIR.tgz of everything but the Triton and FlagGems code caches
#
# Stages, in the order given (all: every stage but scale, cards and sample). Cost on one H200
# (FlagGems v5.3.4):
#   env       cards, versions, the zlbench options pytest sees (always run first; seconds)
#   seed      record the LibTuner seed: abs, mul, sum, fft, mm at --level core (~4.5 min)
#   record    LibTuner record/replay (abs, mul, mm fp16) and plain triton.autotune record/replay
#             (leaky_relu, smoke shapes): keys tuned, .ttgir files (~2 min)
#   noise     the noise pair: two processes of abs, mul, sum, fft, mm at --level core, seed
#             replayed, 30 replays x 10 ms, paired by timer_noise.py (~2 min)
#   capnoise  capture to capture, in plain torch: a graph replay's time per call against its
#             kernels' summed durations, five rows, two processes (capture_noise.py; ~1 min)
#   placement whether a microsecond kernel's duration depends on where its inputs sit: FlagGems
#             abs, mul, sum 64x64 and abs 1M, torch abs 64x64 (and its output) over 8 input
#             placements, two passes, two processes; then over 12 pages at offset 0
#             (placement_noise.py, --pages; ~4 min)
#   oneproc   a comparison inside one process: two graphs of FlagGems abs, mul, div, sum (smoke
#             shapes, float32) on memory of their own, on shared inputs and on one memory (the
#             second captured into the first's pool); then DISABLE_MMA_V3=1 compiled into side B
#             of the same process, with mm, in kernel time and (inputs moved each round) in
#             kernel and replay time (same_process_noise.py; ~10 min)
#   timers    the same selection, two processes each, with the graph timer at its defaults, cold
#             cache, the direct timer, FlagGems' kernel mode and FlagGems' cudagraph mode; noise
#             per timer and latency ratios between them (~9 min)
#   caliber   abs and mul one axis at a time: --level comprehensive, the smoke shape file,
#             FlagGems' kernel mode at warmup/rep 25/100 and 5/20 (twice each, alternating),
#             --zl-backend=cpu against cuda (~6 min)
#   ab        the A/B screen of DISABLE_MMA_V3=1 on abs and mm (AB_OPS to change) on one card,
#             4 rounds on mm, and with two or more cards -n 2 --zl-devices=0,1 and the card-to-
#             card pairs (~6 min)
#   aa        an A/A control: --zl-rounds=2 without --zl-ab on abs and mm (~3 min)
#   refuse    what the timers refuse: a recorded run of abs, nonzero, sum, mul at --level core
#             (the timer of both latencies, the fewest samples), and the nodes a capture of
#             nothing, a view and abs records (~2 min)
#   aa3       the A/A control of the docs: --zl-rounds=3 without a switch over abs, mul, sum, fft
#             and mm, for each mode of SCREEN_MODES (default lockstep): precision per shape (~3 min
#             per mode with DTYPES=float16)
#   mma       DISABLE_MMA_V3=1 on abs, mul and mm, 3 rounds, lockstep: the gate (--zl-fail-beyond
#             5 fails with exit 6, 100 passes), the floor of aa3's control when it ran
#             (--zl-floor-from), report.html and overview.png (~2 min with DTYPES=float16)
#   rlc       RLC_ENHANCE=1 (a FlagTree switch plain Triton ignores) on fft (~1 min)
#   crash     a device-side assert in the middle of a screen's batch (gpu_suites/crash): that
#             operator fails with the reason, the others are measured (~1 min)
#   cost      the screen's cost and precision on COST_OPS (abs, mul, sum, fft, mm, nonzero and 24
#             more) with the smoke shapes, a seed of its own replayed: DISABLE_MMA_V3=1 and an A/A
#             control, 3 rounds each, for each mode of SCREEN_MODES (~4 min per mode and switch);
#             COST_SCREENS (mma aa) picks the screens, COST_SEED a seed recorded before;
#             COST_RESUME=1 continues the screens that an earlier run of this stage into the same
#             -o folder left cut (--zl-resume; a one-process A/A of the 30 takes ~17 min);
#             PROCESS_OPS the test functions process mode screens instead (it costs ~150 s an
#             operator); MODE_CARDS (e.g. "lockstep=0 sequential=1 one-process=2,3 process=4,5")
#             runs each mode at once on cards of its own (those on their own dtypes, fft, on
#             the last of several, the rest under xdist over the others), so that modes fit one
#             call of a lent machine (cards as nvidia-smi numbers them: leave
#             CUDA_VISIBLE_DEVICES unset; each mode runs with CUDA_DEVICE_ORDER=PCI_BUS_ID); the
#             stage ends with one table of its screens
#             (gpu_validate.py table)
#   scale     RLC_ENHANCE=1 over SCALE_OPS test functions (default: the first 100 of the
#             inventory's sample, benchmarks/sample_ops.py) with the smoke shapes, one card;
#             SCALE_BATCH sets --zl-batch-size, SCALE_TIMEOUT --zl-timeout (300 s),
#             SCALE_RECORD_TIMEOUT --zl-record-timeout (900 s: tuning); SCALE_RESUME=1
#             continues a scale screen that an earlier run of this stage into the same -o folder
#             left cut (--zl-resume)
#   cards     one card against all of them: the scale screen's settings (RLC_ENHANCE=1, the smoke
#             shapes, no seed) over the test functions listed in the file CARDS_OPS, one batch per
#             card (CARDS_BATCH, 100 operators), first on card 0 alone, then with -n <cards>
#             --zl-devices=0,..., which splits the operators by the side-worker seconds the first
#             run recorded (their pytest cache, DIR/cards/cache); CARDS_RUNS ("one all") picks the
#             runs, so that a later call may run "all" into the same -o folder; SCALE_TIMEOUT and
#             SCALE_RECORD_TIMEOUT as for scale
#   capture   capture fallbacks (nonzero, unique), a capture that breaks cuSOLVER
#             (linalg_eigvals), ops/no_capture.yaml (cholesky_solve, cholesky_solve_out), cold
#             cache, the random generator after a failed capture, a fatal device error (~5 min)
#   xdist     card pinning with -n 2 --zl-devices=0,1 (two cards) and a fatal device error under
#             -n 1: one failure, the replacement worker measures the next test (~1 min)
#   kill      a recorded run killed by SIGKILL (one process and -n 2) and one stopped by SIGINT:
#             partial rows, the summary, --zl-compare's refusal (~3 min)
#   sample    --zl-inventory of the whole suite, then a stratified operator sample with the smoke
#             shapes over every card (benchmarks/sample_ops.py); SAMPLE_SHARD=K/N runs every N-th
#             test function from the K-th, SAMPLE_SECONDS (480) bounds it (the whole sample needs
#             about three such runs on two cards; needs pytest-timeout)
#
# One command of a lent machine may be limited (10 minutes): give each a few stages, carry the
# seed from the first output folder to the next (--seed), and run stages for different cards at
# once with CUDA_VISIBLE_DEVICES set per invocation and different -o folders.
set -u -o pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$REPO/benchmarks
PY=${PYTHON:-python3}
O=$PWD/zl_validate
SEED=""
PACK=0
STAGES=()
die() { echo "gpu_validate: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    -o) [ $# -ge 2 ] || die "-o needs a folder"; O=$2; shift 2 ;;
    --seed) [ $# -ge 2 ] || die "--seed needs a folder"; SEED=$2; shift 2 ;;
    --pack) PACK=1; shift ;;
    all) STAGES+=(seed record noise capnoise placement oneproc timers caliber ab aa refuse aa3 mma rlc crash cost capture xdist kill); shift ;;
    env|seed|record|noise|capnoise|placement|oneproc|timers|caliber|ab|aa|refuse|aa3|mma|rlc|crash|cost|scale|cards|capture|xdist|kill|sample)
      STAGES+=("$1"); shift ;;
    *) die "unknown argument '$1' (stages: env seed record noise capnoise placement oneproc timers caliber ab aa refuse aa3 mma rlc crash cost scale cards capture xdist kill sample all)" ;;
  esac
done
[ ${#STAGES[@]} -gt 0 ] || die "name at least one stage (see the head of $0)"
[ -d benchmark ] && [ -f pytest.ini ] || die "run from a FlagGems checkout (benchmark/ and pytest.ini here)"
mkdir -p "$O" || die "cannot create $O"
O=$(cd "$O" && pwd)
[ -z "$SEED" ] || SEED=$(cd "$SEED" && pwd) || die "--seed: no such folder"
exec > >(tee -a "$O/validate.log") 2>&1
export PYTHONUNBUFFERED=1

BASE=(--level core -p no:cacheprovider -q -rfEs)
SCREEN_TIMER=()
[ -z "${ZL_TIMER:-}" ] || SCREEN_TIMER=(--zl-timer="$ZL_TIMER")
[ "${SHARED_INPUTS:-0}" != 1 ] || SCREEN_TIMER+=(--zl-shared-inputs)
# shellcheck disable=SC2206  # split on spaces, as documented
[ -z "${SCREEN_ARGS:-}" ] || SCREEN_TIMER+=(${SCREEN_ARGS})
COMMON=("${BASE[@]}")
[ -z "${DTYPES:-}" ] || COMMON+=(--dtypes "$DTYPES")
read -r -a OWN <<< "${OWN_DTYPES-benchmark/test_fft.py::test_perf_fft}"
# own_split TEST...: KEEP the tests measured under DTYPES, OWN_SEL those of OWN_DTYPES (which
# refuse other dtypes: fft takes complex64 only), screened apart on their own dtypes
own_split() {
  KEEP=(); OWN_SEL=()
  local t
  for t in "$@"; do
    if [ -n "${DTYPES:-}" ] && [[ " ${OWN[*]-} " == *" $t "* ]]; then OWN_SEL+=("$t"); else KEEP+=("$t"); fi
  done
}
read -r -a MODES <<< "${SCREEN_MODES:-lockstep}"
# -d '': the default spans several lines (a plain read takes the first line only)
read -r -d '' -a COST_SEL <<< "${COST_OPS:-benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul
  benchmark/test_sum.py::test_sum benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm
  benchmark/test_nonzero.py::test_nonzero benchmark/test_add.py::test_add benchmark/test_addmm.py::test_addmm
  benchmark/test_amax.py::test_amax benchmark/test_argmax.py::test_argmax benchmark/test_bmm.py::test_bmm
  benchmark/test_clamp.py::test_clamp benchmark/test_cos.py::test_cos benchmark/test_cumsum.py::test_cumsum
  benchmark/test_div.py::test_div benchmark/test_eq.py::test_eq benchmark/test_exp.py::test_exp
  benchmark/test_gelu.py::test_gelu benchmark/test_isnan.py::test_isnan
  benchmark/test_layer_norm.py::test_layer_norm benchmark/test_log_softmax.py::test_log_softmax
  benchmark/test_max.py::test_max benchmark/test_mean.py::test_mean benchmark/test_mv.py::test_mv
  benchmark/test_neg.py::test_neg benchmark/test_relu.py::test_relu benchmark/test_rsqrt.py::test_rsqrt
  benchmark/test_sigmoid.py::test_sigmoid benchmark/test_softmax.py::test_softmax benchmark/test_sin.py::test_sin}" || true
NOISE=(benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_sum.py::test_sum
  benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm)
CALIBER=(benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul)
read -r -a AB_SEL <<< "${AB_OPS:-benchmark/test_abs.py::test_abs benchmark/test_mm.py::test_mm}"
R30=(--zl-graph-replays=30 --zl-graph-budget-ms=10)
SMOKE=$($PY -c 'from pytest_zlbench.core.shapes import SHAPES_DIR; print(SHAPES_DIR / "smoke.yaml")')
CARDS=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
CARD_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)

step() { echo; echo "===== $* ($(date -u +%T) UTC)"; }
stage_dir() {  # stage_dir NAME: a fresh DIR/NAME, or the stage is refused
  [ -e "$O/$1" ] && { echo "stage $1: $O/$1 exists; choose another -o"; return 1; }
  mkdir -p "$O/$1"
}
# limit [SECONDS]: the seconds a run may take, SECONDS (RUN_TIMEOUT, 900) or what is left of
# DEADLINE when that is less; fails (prints nothing) when less than 20 s are left
limit() {
  local s=${1:-${RUN_TIMEOUT:-900}}
  if [ -n "${DEADLINE:-}" ]; then
    local left=$(( DEADLINE - $(date +%s) ))
    [ "$left" -ge 20 ] || { echo "gpu_validate: DEADLINE reached, run not started" >&2; return 1; }
    [ "$left" -ge "$s" ] || s=$left
  fi
  echo "$s"
}
# zl NAME [ARGS...]: one recorded pytest run into DIR/NAME, its console in DIR/NAME.log, stopped
# by SIGINT after limit's seconds; prints its exit status (also left in ZL_RC), wall time and
# last line
zl() {
  local name=$1; shift
  local t0 s; t0=$(date +%s)
  ZL_STARTED=0
  s=$(limit) || { ZL_RC=124; echo "$name: not started (DEADLINE)"; return; }
  ZL_STARTED=1
  timeout -s INT -k 30 "$s" $PY -m pytest "$@" --zl-out="$O/$name" > "$O/$name.log" 2>&1
  ZL_RC=$?
  echo "$name: rc=$ZL_RC $(( $(date +%s) - t0 )) s: $(tail -n 1 "$O/$name.log")"
}
# native NAME ARGS...: FlagGems' own timer (no zlbench option), seed configs copied into its own
# cache; its table is parsed from run.log by timer_noise.py through a hand-made identity
native() {
  local name=$1 timer=$2 repeat=$3; shift 3
  local dir=$O/$name t0; t0=$(date +%s)
  mkdir -p "$dir/fg_cache/config_cache"
  cp "$(seed)"/flaggems_cache/config_cache/*.db "$dir/fg_cache/config_cache/"
  FLAGGEMS_CACHE_DIR="$dir/fg_cache" TRITON_CACHE_DIR="$dir/triton_cache" \
    $PY -m pytest "${NOISE[@]}" "${COMMON[@]}" -s "$@" > "$dir/run.log" 2>&1
  echo "$name: rc=$? $(( $(date +%s) - t0 )) s: $(grep -c SUCCESS "$dir/run.log") rows"
  $PY "$BENCH/gpu_validate.py" identity "$dir" "$timer" "$repeat" "$CARD_NAME"
}
seed() {  # the seed folder; recorded first when missing
  if [ -n "$SEED" ]; then echo "$SEED"; return; fi
  [ -f "$O/seed/.complete" ] || stage_seed >&2
  echo "$O/seed"
}
noise() { $PY "$BENCH/timer_noise.py" "$@"; }
summary() { sed -n '/zlbench run summary/,$p' "$1" | grep "^zlbench:"; }
# signalled NAME SIGNAL SECONDS ARGS...: a recorded run of FlagGems tests in its own process
# group (SIGINT back to its default: a background job of a script ignores it), signalled after
# SECONDS; then what is left in its folder, its summary and what --zl-compare says of it
signalled() {
  local name=$1 sig=$2 secs=$3; shift 3
  setsid $PY -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
    $PY -m pytest "$@" "${COMMON[@]}" --zl-replay-from="$(seed)" --zl-out="$O/kill/$name" > "$O/kill/$name.log" 2>&1 &
  local pid=$!
  sleep "$secs"
  kill -"$sig" -- -"$pid" 2>/dev/null
  wait "$pid"
  echo "$name: rc=$? after SIG$sig at ${secs} s; files: $(cd "$O/kill/$name" 2>/dev/null && ls -A | tr '\n' ' ')"
  $PY "$BENCH/gpu_validate.py" rows "$O/kill/$name" | head -n 1
  grep -E "^zlbench:|passed|failed|Interrupt" "$O/kill/$name.log" | tail -n 5 | sed 's/^/   log: /'
  (cd /tmp && $PY -m pytest --noconftest -p no:cacheprovider --zl-compare="$O/kill/$name" \
     --zl-compare="$O/kill/$name" --zl-out="$O/kill/cmp_$name" > "$O/kill/cmp_$name.log" 2>&1
   echo "   --zl-compare: rc=$? $(grep -m 1 ERROR "$O/kill/cmp_$name.log")")
}

stage_env() {
  step "env"
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader
  $PY -c 'import sys, torch, triton, pytest; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "pytest", pytest.__version__, "cards", torch.cuda.device_count())'
  $PY -c 'import importlib.metadata as m; print("pytest-zlbench", m.version("pytest-zlbench"))'
  echo "FlagGems checkout: $PWD ($(git describe --tags 2>/dev/null || echo 'not a git checkout'))"
  echo "zlbench options seen by pytest: $($PY -m pytest --help | grep -c -- '--zl-')"
  echo "smoke shapes: $SMOKE"
}

stage_seed() {
  step "seed: recording LibTuner configs (abs, mul, sum, fft, mm at core)"
  own_split "${NOISE[@]}"
  [ ${#KEEP[@]} -eq 0 ] || zl seed "${KEEP[@]}" "${COMMON[@]}"
  ls "$O"/seed/flaggems_cache/config_cache/*.db
}

stage_record() {
  step "record: LibTuner record / replay, abs mul mm fp16"
  stage_dir record || return
  local sel=(benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_mm.py::test_mm)
  zl record/rec "${sel[@]}" "${COMMON[@]}" --dtypes float16
  zl record/rep "${sel[@]}" "${COMMON[@]}" --dtypes float16 --zl-replay-from="$O/record/rec"
  for d in rec rep; do $PY "$BENCH/gpu_validate.py" tuning "$O/record/$d"; done
  step "record: plain triton.autotune record / replay, leaky_relu (smoke shapes)"
  zl record/lrelu_rec benchmark/test_leaky_relu.py::test_leaky_relu "${COMMON[@]}" --shape_file="$SMOKE"
  zl record/lrelu_rep benchmark/test_leaky_relu.py::test_leaky_relu "${COMMON[@]}" --shape_file="$SMOKE" \
    --zl-replay-from="$O/record/lrelu_rec"
  for d in lrelu_rec lrelu_rep; do $PY "$BENCH/gpu_validate.py" tuning "$O/record/$d" _leaky_relu_kernel; done
}

stage_noise() {
  step "noise: two processes, 30 replays x 10 ms"
  stage_dir noise || return
  local s; s=$(seed)
  for r in n1 n2; do zl noise/$r "${NOISE[@]}" "${COMMON[@]}" --zl-replay-from="$s" "${R30[@]}"; done
  noise "graph 30 x 10 ms=$O/noise/n1,$O/noise/n2"
  for r in n1 n2; do summary "$O/noise/$r.log"; done
}

stage_capnoise() {
  step "capnoise: replay time against kernel time, capture to capture, two processes"
  stage_dir capnoise || return
  local p
  for p in 1 2; do
    $PY "$BENCH/capture_noise.py" --json "$O/capnoise/process$p.json" | tee "$O/capnoise/process$p.txt"
  done
}

# fgpy ARGS...: python with this checkout's flag_gems importable (pytest gets src/ from pytest.ini)
fgpy() { PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" $PY "$@"; }

stage_placement() {
  step "placement: a microsecond kernel's duration against where its inputs sit, two processes"
  stage_dir placement || return
  local p
  for p in 1 2; do
    fgpy "$BENCH/placement_noise.py" --seed "$p" --json "$O/placement/process$p.json" \
      | tee "$O/placement/process$p.txt"
  done
  fgpy "$BENCH/placement_noise.py" --pages --placements 12 --json "$O/placement/pages.json" \
    | tee "$O/placement/pages.txt"
}

stage_oneproc() {
  step "oneproc: two graphs of one op in one process, on their own and on one memory"
  stage_dir oneproc || return
  local c=$O/oneproc
  fgpy "$BENCH/same_process_noise.py" --json "$c/ways.json" | grep -v -i warn | tee "$c/ways.txt"
  fgpy "$BENCH/same_process_noise.py" --switch DISABLE_MMA_V3=1 --rounds 3 --json "$c/switch.json" \
    | grep -v -i warn | tee "$c/switch.txt"
  local t
  for t in kernel replay; do
    fgpy "$BENCH/same_process_noise.py" --switch DISABLE_MMA_V3=1 --rounds 3 --move --timer "$t" \
      --json "$c/switch_move_$t.json" | grep -v -i warn | tee "$c/switch_move_$t.txt"
  done
}

stage_timers() {
  step "timers: two processes per timer"
  stage_dir timers || return
  local s; s=$(seed)
  for r in 1 2; do
    zl timers/graph$r "${NOISE[@]}" "${COMMON[@]}" --zl-replay-from="$s"
    zl timers/cold$r "${NOISE[@]}" "${COMMON[@]}" --zl-replay-from="$s" --zl-cold-cache
    zl timers/direct$r "${NOISE[@]}" "${COMMON[@]}" --zl-replay-from="$s" --zl-timer=direct
    native timers/fgk$r direct "flaggems-kernel:warmup=25ms,rep=100ms" --mode kernel --warmup 25 --iter 100
    native timers/fgg$r graph "flaggems-cudagraph:rep=20ms" --mode cudagraph --iter 20
  done
  local t=$O/timers
  noise "graph, defaults (10 x 20 ms)=$t/graph1,$t/graph2" "graph, cold cache=$t/cold1,$t/cold2" \
    "direct (do_bench 25/100 ms)=$t/direct1,$t/direct2" "FlagGems kernel mode=$t/fgk1,$t/fgk2" \
    "FlagGems cudagraph mode=$t/fgg1,$t/fgg2"
  noise --ratio "direct / graph=$t/graph1,$t/direct1" "cold / warm graph=$t/graph1,$t/cold1" \
    "FlagGems cudagraph / our graph=$t/graph1,$t/fgg1"
}

stage_caliber() {
  step "caliber: one axis at a time on abs and mul"
  stage_dir caliber || return
  local s c=$O/caliber
  s=$(seed)
  zl caliber/core "${CALIBER[@]}" "${COMMON[@]}" --zl-replay-from="$s" "${R30[@]}"
  zl caliber/comprehensive "${CALIBER[@]}" "${COMMON[@]}" --level=comprehensive --zl-replay-from="$s" "${R30[@]}"
  zl caliber/smoke "${CALIBER[@]}" "${COMMON[@]}" --shape_file="$SMOKE" --zl-replay-from="$s" "${R30[@]}"
  for r in w25a w5a w25b w5b; do
    local dir=$c/$r
    mkdir -p "$dir/fg_cache/config_cache"; cp "$s"/flaggems_cache/config_cache/*.db "$dir/fg_cache/config_cache/"
    case $r in w25*) set -- --warmup 25 --iter 100; local rep="warmup=25ms,rep=100ms";;
               *) set -- --warmup 5 --iter 20; local rep="warmup=5ms,rep=20ms";; esac
    FLAGGEMS_CACHE_DIR="$dir/fg_cache" TRITON_CACHE_DIR="$dir/triton_cache" \
      $PY -m pytest "${CALIBER[@]}" "${COMMON[@]}" -s --mode kernel "$@" > "$dir/run.log" 2>&1
    echo "$r: rc=$? $(grep -c SUCCESS "$dir/run.log") rows"
    $PY "$BENCH/gpu_validate.py" identity "$dir" direct "$rep" "$CARD_NAME"
  done
  zl caliber/backend_cuda "${CALIBER[@]}" "${COMMON[@]}" --zl-replay-from="$s" --zl-backend=cuda
  zl caliber/backend_cpu "${CALIBER[@]}" "${COMMON[@]}" --zl-replay-from="$s" --zl-backend=cpu
  noise "level core vs comprehensive=$c/core,$c/comprehensive" "shapes upstream vs smoke=$c/core,$c/smoke" \
    "kernel 25/100 vs 25/100=$c/w25a,$c/w25b" "kernel 5/20 vs 5/20=$c/w5a,$c/w5b" \
    "kernel 25/100 vs 5/20 (a)=$c/w25a,$c/w5a" "kernel 25/100 vs 5/20 (b)=$c/w25b,$c/w5b" \
    "backend cuda vs cpu=$c/backend_cuda,$c/backend_cpu"
  noise --ratio "kernel 5/20 / 25/100 (a)=$c/w25a,$c/w5a" "kernel 5/20 / 25/100 (b)=$c/w25b,$c/w5b" \
    "cpu / cuda=$c/backend_cuda,$c/backend_cpu"
}

stage_ab() {
  step "ab: DISABLE_MMA_V3=1 on ${AB_SEL[*]}"
  stage_dir ab || return
  local s; s=$(seed)
  local ab=(--zl-ab=DISABLE_MMA_V3=1 --zl-replay-from="$s" --zl-timeout=300 "${COMMON[@]}")
  CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} zl ab/screen1 "${AB_SEL[@]}" "${ab[@]}"
  sed -n '/^op  /,/passed\|failed/p' "$O/ab/screen1.log"
  CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} zl ab/mm4 benchmark/test_mm.py::test_mm "${ab[@]}" --zl-rounds=4
  sed -n '/^op  /,/passed\|failed/p' "$O/ab/mm4.log"
  noise "mm side A, two processes on one card=$O/ab/mm4/mm/r1_A,$O/ab/mm4/mm/r2_A"
  if [ "$CARDS" -ge 2 ]; then
    zl ab/screen2 "${AB_SEL[@]}" "${ab[@]}" -n 2 --zl-devices=0,1
    sed -n '/^op  /,/passed\|failed/p' "$O/ab/screen2.log"
    $PY "$BENCH/gpu_validate.py" devices "$O"/ab/screen1/*/r1_A "$O"/ab/screen2/*/r1_?
    local pairs=()
    for d in "$O"/ab/screen2/*/r1_A; do
      local op; op=$(basename "$(dirname "$d")")
      pairs+=("$op side A, screen1 vs screen2 (see the devices above)=$O/ab/screen1/$op/r1_A,$d")
    done
    noise "${pairs[@]}"
  else
    echo "ab: one card; the two-card screen and the card-to-card pairs need two"
  fi
}

stage_aa() {
  step "aa: A/A control, --zl-rounds=2 without --zl-ab"
  stage_dir aa || return
  zl aa/screen "${AB_SEL[@]}" "${COMMON[@]}" --zl-rounds=2 --zl-replay-from="$(seed)" --zl-timeout=300
  sed -n '/^op  /,/passed\|failed/p' "$O/aa/screen.log"
}

# screen NAME ARGS...: one screen into DIR/NAME (zl), then its table and its summary by
# gpu_validate.py screen (verdicts, seconds per operator, timed share, precision per shape)
screen() {
  local name=$1; shift
  local t0; t0=$(date +%s)
  zl "$name" "$@" ${SCREEN_TIMER[@]+"${SCREEN_TIMER[@]}"}
  [ "$ZL_STARTED" = 1 ] || return 0  # no summary of an earlier call's root
  sed -n '/^op  /,/passed\|failed/p' "$O/$name.log"
  grep -E "^zlbench: (switch|--zl-fail-beyond)" "$O/$name.log"
  $PY "$BENCH/gpu_validate.py" screen "$O/$name" "$(( $(date +%s) - t0 ))"
}

stage_refuse() {
  step "refuse: the timer of both latencies, the fewest samples, what a capture records"
  stage_dir refuse || return
  zl refuse/run benchmark/test_abs.py benchmark/test_nonzero.py benchmark/test_sum.py \
    benchmark/test_mul.py "${COMMON[@]}"
  $PY "$BENCH/gpu_validate.py" timers "$O/refuse/run"
  $PY "$BENCH/gpu_validate.py" rows "$O/refuse/run" | grep -i "direct" | head -n 12
  $PY "$BENCH/gpu_validate.py" nodes
}

stage_aa3() {
  step "aa3: A/A control, 3 rounds, modes ${MODES[*]}"
  stage_dir aa3 || return
  local s; s=$(seed)
  own_split "${NOISE[@]}"
  for mode in "${MODES[@]}"; do
    [ ${#KEEP[@]} -eq 0 ] || screen "aa3/$mode" "${KEEP[@]}" "${COMMON[@]}" --zl-rounds=3 --zl-screen-mode="$mode" \
      --zl-replay-from="$s" --zl-timeout=300
    [ ${#OWN_SEL[@]} -eq 0 ] || screen "aa3/${mode}_own" "${OWN_SEL[@]}" "${BASE[@]}" --zl-rounds=3 \
      --zl-screen-mode="$mode" --zl-timeout=300
  done
}

stage_mma() {
  step "mma: DISABLE_MMA_V3=1 on abs, mul, mm, 3 rounds, lockstep; the gate; the report"
  stage_dir mma || return
  local sel=(benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_mm.py::test_mm)
  local floor=() report=()
  if [ -f "$O/aa3/lockstep/screen_result.json" ] && $PY -m pytest --help 2>/dev/null | grep -c -- --zl-floor-from > /dev/null; then
    floor=(--zl-floor-from="$O/aa3/lockstep"); report=(--floor-from "$O/aa3/lockstep")
  fi
  screen mma/screen "${sel[@]}" "${COMMON[@]}" --zl-ab=DISABLE_MMA_V3=1 --zl-rounds=3 \
    --zl-replay-from="$(seed)" --zl-timeout=300 --zl-fail-beyond=5 ${floor[@]+"${floor[@]}"}
  echo "the screen with --zl-fail-beyond=5: exit status $ZL_RC (6: the gate failed it)"
  for pct in 5 100; do  # re-aggregated against the same floor as the screen
    (cd /tmp && $PY -m pytest_zlbench.cli report "$O/mma/screen" --fail-beyond "$pct" \
       ${report[@]+"${report[@]}"} > "$O/mma/report_$pct.log" 2>&1
     echo "zlbench report --fail-beyond $pct: exit $?"; grep -E "fail-beyond|wrote" "$O/mma/report_$pct.log")
  done
  $PY -c 'import json, sys, jsonschema
from importlib import resources
schema = json.loads(resources.files("pytest_zlbench.schemas").joinpath("screen_result.schema.json").read_text())
jsonschema.validate(json.load(open(sys.argv[1])), schema); print("screen_result.json: valid against its schema")' \
    "$O/mma/screen/screen_result.json" || echo "schema check not run (needs jsonschema)"
  ls "$O/mma/screen" | grep -E "report.html|overview" || true
}

stage_rlc() {
  step "rlc: RLC_ENHANCE=1 on fft"
  stage_dir rlc || return
  screen rlc/fft benchmark/test_fft.py::test_perf_fft "${COMMON[@]}" --zl-ab=RLC_ENHANCE=1 \
    --zl-rounds=3 --zl-replay-from="$(seed)" --zl-timeout=300
}

stage_crash() {
  step "crash: a device-side assert in the middle of a screen's batch"
  stage_dir crash || return
  (cd "$BENCH/gpu_suites/crash" && screen crash/screen -p no:cacheprovider -q -rfE --zl-rounds=2 \
     --zl-timeout=120)
  grep -E "^FAILED|fatal|died|alone|lost" "$O/crash/screen.log" | head -n 12
}

stage_cost() {
  step "cost: ${#COST_SEL[@]} test functions, smoke shapes, modes ${MODES[*]}, screens ${COST_SCREENS:-mma aa}${MODE_CARDS:+, cards $MODE_CARDS}"
  local resume=() mode
  if [ -n "${MODE_CARDS:-}" ]; then
    mode_cards || return
  fi
  if [ "${COST_RESUME:-0}" = 1 ] && [ -d "$O/cost" ]; then
    resume=(--zl-resume)  # the same operators and options; a cut seed is recorded again
    [ -f "$O/cost/seed/.complete" ] || rm -rf "$O/cost/seed"
  else
    stage_dir cost || return
  fi
  local smoke=(--shape_file="$SMOKE") seed=${COST_SEED:-$O/cost/seed}
  own_split "${COST_SEL[@]}"
  [ -n "${COST_SEED:-}" ] || [ -d "$O/cost/seed" ] || [ ${#KEEP[@]} -eq 0 ] || zl cost/seed "${KEEP[@]}" "${COMMON[@]}" "${smoke[@]}"
  if [ -z "${MODE_CARDS:-}" ]; then
    for mode in "${MODES[@]}"; do cost_mode "$mode"; done
  else  # each mode on its cards at once, its console kept apart until all have ended
    local pids=()
    for mode in "${MODES[@]}"; do
      # CUDA numbers the cards as nvidia-smi does only in PCI bus order
      (export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=${CARDS_OF[$mode]}; cost_mode "$mode") > "$O/cost/$mode.console" 2>&1 &
      pids+=($!)
    done
    wait "${pids[@]}"
    for mode in "${MODES[@]}"; do
      echo; echo "----- $mode on card(s) ${CARDS_OF[$mode]}"; cat "$O/cost/$mode.console"
    done
  fi
  local roots=() kind name
  for mode in "${MODES[@]}"; do
    for kind in ${COST_SCREENS:-mma aa}; do
      for name in "${kind}_$mode" "${kind}_${mode}_own"; do
        [ -f "$O/cost/$name/screen_result.json" ] || continue
        if [ -f "$O/cost/$name.cards" ]; then
          roots+=("$O/cost/$name=$name (cards $(cat "$O/cost/$name.cards"))")
        else
          roots+=("$O/cost/$name=$name")
        fi
      done
    done
  done
  [ ${#roots[@]} -eq 0 ] || { echo; $PY "$BENCH/gpu_validate.py" table "${roots[@]}"; }
}
# cost_mode MODE: the cost stage's screens in MODE (PROCESS_OPS for process mode); with cards of
# its own (MODE_CARDS), those on their own dtypes on the last of them at the same time as the
# others on the rest (on all of them, under xdist when several, without any of the former)
cost_mode() {
  local mode=$1 sel=("${COST_SEL[@]}") cards=${CARDS_OF[$mode]:-}
  [ "$mode" != process ] || [ -z "${PROCESS_OPS:-}" ] || read -r -a sel <<< "$PROCESS_OPS"
  own_split "${sel[@]}"
  if [ -z "$cards" ] || [[ $cards != *,* ]] || [ ${#KEEP[@]} -eq 0 ] || [ ${#OWN_SEL[@]} -eq 0 ]; then
    cost_chain "$mode" both "$cards"
    return
  fi
  (export CUDA_VISIBLE_DEVICES=${cards##*,}; cost_chain "$mode" own "") > "$O/cost/${mode}_own.console" 2>&1 &
  local own=$!
  (export CUDA_VISIBLE_DEVICES=${cards%,*}; cost_chain "$mode" keep "${cards%,*}")
  wait "$own"
  cat "$O/cost/${mode}_own.console"
}
# cost_chain MODE keep|own|both CARDS: each screen of COST_SCREENS in MODE over KEEP (under
# xdist over CARDS when they are several), OWN_SEL, or both
cost_chain() {
  local mode=$1 which=$2 k par=() kind
  k=$(( $(tr -cd , <<< "$3" | wc -c) + 1 ))
  [ "$k" -lt 2 ] || par=(-n "$k" --zl-devices="$(seq -s, 0 $(( k - 1 )))")
  for kind in ${COST_SCREENS:-mma aa}; do
    local switch=()
    [ "$kind" = mma ] && switch=(--zl-ab=DISABLE_MMA_V3=1)
    if [ -n "${MODE_CARDS:-}" ]; then  # the cards each screen ran on, for the table
      [ "$which" = own ] || [ ${#KEEP[@]} -eq 0 ] || echo "$CUDA_VISIBLE_DEVICES" > "$O/cost/${kind}_$mode.cards"
      [ "$which" = keep ] || [ ${#OWN_SEL[@]} -eq 0 ] || echo "${CUDA_VISIBLE_DEVICES%%,*}" > "$O/cost/${kind}_${mode}_own.cards"
    else  # on every card now: an earlier run's cards no longer name where it ran
      rm -f "$O/cost/${kind}_$mode.cards" "$O/cost/${kind}_${mode}_own.cards"
    fi
    [ "$which" = own ] || [ ${#KEEP[@]} -eq 0 ] || cost_screen "cost/${kind}_$mode" "${KEEP[@]}" "${COMMON[@]}" "${smoke[@]}" \
      ${switch[@]+"${switch[@]}"} --zl-rounds=3 --zl-screen-mode="$mode" --zl-replay-from="$seed" --zl-timeout=300 ${par[@]+"${par[@]}"}
    [ "$which" = keep ] || [ ${#OWN_SEL[@]} -eq 0 ] || cost_screen "cost/${kind}_${mode}_own" "${OWN_SEL[@]}" "${BASE[@]}" \
      "${smoke[@]}" ${switch[@]+"${switch[@]}"} --zl-rounds=3 --zl-screen-mode="$mode" --zl-timeout=300
  done
}
# mode_cards: CARDS_OF[mode] from MODE_CARDS ("lockstep=0 process=1,2"): every mode of
# SCREEN_MODES given cards of its own, or the stage is refused
declare -A CARDS_OF=()
mode_cards() {
  local pair mode cards c seen=","
  for pair in $MODE_CARDS; do
    mode=${pair%%=*} cards=${pair#*=}
    [[ $pair == *=* && $cards =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "cost: MODE_CARDS: '$pair' is not MODE=CARD[,CARD...]"; return 1; }
    for c in ${cards//,/ }; do
      [[ $seen != *",$c,"* ]] || { echo "cost: MODE_CARDS: card $c given twice (two screens on one card time each other)"; return 1; }
      [ "$c" -lt "$CARDS" ] || { echo "cost: MODE_CARDS: card $c, but $CARDS card(s) visible"; return 1; }
      seen+="$c,"
    done
    CARDS_OF[$mode]=$cards
  done
  for mode in "${MODES[@]}"; do
    [ -n "${CARDS_OF[$mode]:-}" ] || { echo "cost: MODE_CARDS gives no card to mode $mode"; return 1; }
  done
}
# cost_screen NAME ARGS...: screen NAME, continued with --zl-resume where COST_RESUME found its
# root (the earlier log kept beside it, with its end time in the name)
cost_screen() {
  local name=$1; shift
  if [ ${#resume[@]} -gt 0 ] && [ -d "$O/$name" ]; then
    [ ! -f "$O/$name.log" ] || mv "$O/$name.log" "$O/$name.$(date -r "$O/$name.log" +%s).log"
    screen "$name" "$@" "${resume[@]}"
  else
    screen "$name" "$@"
  fi
}

stage_scale() {
  step "scale: RLC_ENHANCE=1 over a sample of operators with the smoke shapes"
  local c=$O/scale resume=()
  if [ "${SCALE_RESUME:-0}" = 1 ] && [ -f "$c/functions.txt" ]; then
    resume=(--zl-resume)  # the same functions and options; its console goes to a new log
  else
    stage_dir scale || return
    if [ -n "${SCALE_OPS:-}" ]; then
      tr ' ' '\n' <<< "$SCALE_OPS" | grep . > "$c/functions.txt"
    else
      $PY -m pytest benchmark --zl-inventory="$c/inventory.tsv" -p no:cacheprovider -q 2>&1 | tail -n 1
      $PY "$BENCH/sample_ops.py" pick "$c/inventory.tsv" | head -n "${SCALE_N:-100}" > "$c/functions.txt"
    fi
  fi
  [ -d "$c/screen" ] || resume=()  # cut before its screen held anything: nothing to continue
  local log=scale/screen
  [ ${#resume[@]} -eq 0 ] || log=scale/screen_resumed_$(date +%s)
  local t0 s; t0=$(date +%s)
  s=$(limit) || return
  timeout -s INT -k 30 "$s" $PY -m pytest $(cat "$c/functions.txt") "${COMMON[@]}" \
    --shape_file="$SMOKE" --zl-ab=RLC_ENHANCE=1 --zl-rounds=3 --zl-timeout="${SCALE_TIMEOUT:-300}" \
    --zl-record-timeout="${SCALE_RECORD_TIMEOUT:-900}" \
    ${SCALE_BATCH:+--zl-batch-size="$SCALE_BATCH"} ${resume[@]+"${resume[@]}"} ${SCREEN_TIMER[@]+"${SCREEN_TIMER[@]}"} \
    --zl-out="$c/screen" > "$O/$log.log" 2>&1
  echo "$log: rc=$? $(( $(date +%s) - t0 )) s: $(tail -n 1 "$O/$log.log")"
  $PY "$BENCH/gpu_validate.py" screen "$c/screen" "$(( $(date +%s) - t0 ))"
}

stage_cards() {
  step "cards: one card against $CARDS, RLC_ENHANCE=1 over the functions of ${CARDS_OPS:-}"
  [ -f "${CARDS_OPS:-}" ] || { echo "cards: CARDS_OPS names no file of test functions"; return; }
  local c=$O/cards run devices
  mkdir -p "$c"
  for run in ${CARDS_RUNS:-one all}; do
    [ ! -e "$c/$run" ] || { echo "cards: $c/$run exists; choose another -o"; continue; }
    local cards=()
    case $run in
      one) cards=(--zl-devices=0) ;;
      all) [ "$CARDS" -ge 2 ] || { echo "cards: one card; -n needs two"; continue; }
        [ -d "$c/cache" ] || echo "cards: no run on one card before: the cards split by test count"
        devices=$(seq -s, 0 $(( CARDS - 1 )))
        cards=(-n "$CARDS" --zl-devices="$devices") ;;
      *) echo "cards: unknown run '$run' (one, all)"; continue ;;
    esac
    local t0 s; t0=$(date +%s)
    s=$(limit) || return
    # BASE but its -p no:cacheprovider: the split reads the cache the first run wrote
    timeout -s INT -k 30 "$s" $PY -m pytest $(cat "$CARDS_OPS") --level core -q -rfEs \
      -o cache_dir="$c/cache" ${DTYPES:+--dtypes "$DTYPES"} --shape_file="$SMOKE" \
      --zl-ab=RLC_ENHANCE=1 --zl-rounds=3 --zl-timeout="${SCALE_TIMEOUT:-300}" \
      --zl-record-timeout="${SCALE_RECORD_TIMEOUT:-900}" --zl-batch-size="${CARDS_BATCH:-100}" \
      "${cards[@]}" ${SCREEN_TIMER[@]+"${SCREEN_TIMER[@]}"} --zl-out="$c/$run" > "$c/$run.log" 2>&1
    local rc=$? wall=$(( $(date +%s) - t0 ))
    echo "cards/$run: rc=$rc $wall s: $(tail -n 1 "$c/$run.log")"
    [ "$rc" != 0 ] || echo "$wall" > "$c/$run.wall"  # a cut or failed run has no wall to compare
    $PY "$BENCH/gpu_validate.py" screen "$c/$run" "$wall"
  done
  if [ -s "$c/one.wall" ] && [ -s "$c/all.wall" ]; then
    local one all; one=$(cat "$c/one.wall"); all=$(cat "$c/all.wall")
    echo "cards: one card $one s, $CARDS cards $all s: x$($PY -c "print(f'{$one / max($all, 1):.2f}')")"
  fi
}

stage_capture() {
  step "capture: fallbacks, broken and killing captures, cold cache, generator, fatal error"
  stage_dir capture || return
  zl capture/fallback benchmark/test_nonzero.py benchmark/test_unique.py "${COMMON[@]}"
  zl capture/eigvals benchmark/test_linalg_eigvals.py::test_linalg_eigvals "${COMMON[@]}" --shape_file="$SMOKE"
  zl capture/chol benchmark/test_cholesky_solve.py::test_cholesky_solve "${COMMON[@]}"
  zl capture/chol_out benchmark/test_cholesky_solve.py::test_cholesky_solve_out "${COMMON[@]}"
  zl capture/cold benchmark/test_abs.py::test_abs "${COMMON[@]}" --dtypes float16 --zl-cold-cache
  zl capture/rng_fg benchmark/test_ctc_loss.py::test_ctc_loss_backward benchmark/test_embedding.py::test_embedding \
    benchmark/test_glu.py::test_glu "${COMMON[@]}" --shape_file="$SMOKE"
  (cd "$BENCH/gpu_suites/rng" && zl capture/rng -p no:cacheprovider -q -rA)
  (cd "$BENCH/gpu_suites/fatal" && zl capture/fatal -p no:cacheprovider -q -rfE)
  grep -h "^FAILED\|^PASSED\|zlbench: the device" "$O"/capture/rng.log "$O"/capture/fatal.log
  local c=$O/capture
  $PY "$BENCH/gpu_validate.py" rows "$c/fallback" "$c/eigvals" "$c/chol" "$c/chol_out" "$c/cold" \
    "$c/rng_fg" "$c/rng" "$c/fatal"
}

stage_xdist() {
  step "xdist: card pinning, a fatal device error under -n 1"
  stage_dir xdist || return
  if [ "$CARDS" -ge 2 ]; then
    (cd "$BENCH/gpu_suites/pinning" && zl xdist/pin -n 2 --zl-devices=0,1 -p no:cacheprovider -q -rA)
    grep "CUDA_VISIBLE_DEVICES=" "$O/xdist/pin.log" | sort | uniq -c | head -n 4
    $PY "$BENCH/gpu_validate.py" cards "$O/xdist/pin"
  else
    echo "xdist: one card; pinning needs two"
  fi
  (cd "$BENCH/gpu_suites/fatal" && zl xdist/fatal -n 1 -p no:cacheprovider -q -rfE --junitxml="$O/xdist/fatal.xml")
  grep -o 'tests="[0-9]*"\|failures="[0-9]*"\|errors="[0-9]*"' "$O/xdist/fatal.xml" | head -n 3 | tr '\n' ' '; echo
  $PY "$BENCH/gpu_validate.py" rows "$O/xdist/fatal"
}

stage_kill() {
  step "kill: SIGKILL and SIGINT to recorded runs"
  stage_dir kill || return
  local two=(benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul)
  signalled kill_one KILL "${KILL_AT:-25}" "${two[@]}"
  signalled kill_xdist KILL "${KILL_XDIST_AT:-35}" "${two[@]}" benchmark/test_sum.py::test_sum -n 2
  signalled int_one INT "${INT_AT:-20}" "${two[@]}"
}

stage_sample() {
  step "sample: inventory, then the stratified operator sample (shard ${SAMPLE_SHARD:-1/1})"
  stage_dir sample || return
  $PY -c 'import pytest_timeout' 2>/dev/null || { echo "sample: needs pytest-timeout"; return; }
  local shard=${SAMPLE_SHARD:-1/1} c=$O/sample
  local k=${shard%/*} n=${shard#*/} t0; t0=$(date +%s)
  $PY -m pytest benchmark --zl-inventory="$c/inventory.tsv" -p no:cacheprovider -q 2>&1 | tail -n 3
  $PY "$BENCH/sample_ops.py" pick "$c/inventory.tsv" | awk -v k="$k" -v n="$n" '(NR - 1) % n == k - 1' > "$c/functions.txt"
  local devices; devices=$(seq -s, 0 $(( CARDS > 0 ? CARDS - 1 : 0 )))
  local opts=("${COMMON[@]}" --shape_file="$SMOKE" --zl-devices="$devices" --zl-graph-replays=3 --zl-graph-budget-ms=2)
  echo "$(wc -l < "$c/functions.txt") test functions on cards $devices"
  timeout -s INT -k 30 "${SAMPLE_SECONDS:-480}" $PY -m pytest $(cat "$c/functions.txt") "${opts[@]}" \
    -n "${SAMPLE_WORKERS:-24}" --timeout="${SAMPLE_TIMEOUT:-420}" --junitxml="$c/run.xml" \
    --zl-out="$c/run" > "$c/run.log" 2>&1
  echo "sample: rc=$? $(( $(date +%s) - t0 )) s: $(tail -n 1 "$c/run.log")"
  $PY "$BENCH/sample_ops.py" failed "$c/inventory.tsv" "$c/run.xml" > "$c/failed.txt"
  local runs=("$c/run") xmls=("$c/run.xml")
  if [ -s "$c/failed.txt" ]; then  # a second pass: a failure there is the test's own
    timeout -s INT -k 30 "${SAMPLE_SECONDS:-480}" $PY -m pytest $(cat "$c/failed.txt") "${opts[@]}" \
      -n "${SAMPLE_WORKERS_RETRY:-12}" --timeout="${SAMPLE_TIMEOUT:-420}" --junitxml="$c/retry.xml" \
      --zl-out="$c/retry" > "$c/retry.log" 2>&1
    local rc=$?
    echo "second pass over $(wc -l < "$c/failed.txt") functions: rc=$rc $(tail -n 1 "$c/retry.log")"
    runs+=("$c/retry"); xmls+=("$c/retry.xml")
  fi
  $PY "$BENCH/sample_ops.py" report "$c/inventory.tsv" --runs "${runs[@]}" --junit "${xmls[@]}" > "$c/report.tsv"
  grep "^#" "$c/report.tsv"
}

stage_env
for s in "${STAGES[@]}"; do
  [ "$s" = env ] || "stage_$s"
done
if [ "$PACK" = 1 ]; then
  tar -czf "$O.tgz" -C "$(dirname "$O")" --exclude='*/triton_cache/*' --exclude='*/code_cache/*' \
    --exclude='*/fg_cache/*' "$(basename "$O")" && echo "packed: $O.tgz"
fi
