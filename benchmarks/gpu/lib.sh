# Shared by benchmarks/gpu/call4.sh and later (sourced, not run).
#   zl_setup N   work directory /tmp/wN, everything printed also in /tmp/wN/callN.log, the
#                tarball $OUT/callN.tgz written at exit (caches left out), the carried wheels
#                installed; sets W, REPO, SEED (the committed LibTuner seed) and START
#   zl_both F G  runs the shell functions F and G at once (F's output in $W/F.log) and waits
#                for both
#   left         seconds left of the script's LIMIT (set LIMIT after zl_setup)
#   lim N        N seconds, or what is left if that is less; nothing and status 1 (skip the
#                step) when under 15 s are left

zl_setup() {
  W=/tmp/w$1; CALL=call$1; REPO=$PWD; SEED=$REPO/benchmarks/gpu/seed/h200_v5.3.4
  START=$(date +%s); mkdir -p "$W"
  exec > >(tee "$W/$CALL.log") 2>&1
  trap 'tar -czf "$OUT/$CALL.tgz" -C /tmp --exclude="*/triton_cache/*" --exclude="*/code_cache/*" --exclude="*/config_cache/*" "${W#/tmp/}"' EXIT
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
  export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
}

zl_both() {
  "$1" > "$W/$1.log" 2>&1 &
  local first=$!
  "$2" > "$W/$2.log" 2>&1 &
  local second=$!
  wait "$first" "$second"  # never a bare wait: it also waits for the log's tee, forever
}

left() { echo $(( LIMIT - ($(date +%s) - START) )); }

lim() { local l; l=$(left); [ "$l" -ge 15 ] || return 1; [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
