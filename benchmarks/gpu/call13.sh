#!/usr/bin/env bash
# GPU validation, call 13 (nvidia-h200-x2; run as: bash benchmarks/gpu/call13.sh, carry .fg and .whl).
# Written 2026-11-30 after call 12, which found the in-process "step" to be a toggle between two
# levels (64x64 abs: 0.92 / 1.10 us; 64x512x512: 16.73 / 17.11 us) that follows the number of
# graphs the process measured (the fourth one on; throwaway graphs of neg count too), not time
# or idle gaps (500 ms sleeps, 10 ms measurements: the same fourth), and that sometimes flips
# back. What about a graph is it? benchmarks/gpu/offset_probe.py, both cards, interleaved:
#   base      as call 12 (control)
#   reuse     a graph captured first is timed again after every new measurement (abs-held)
#   rsleep    the same with 500 ms idle between measurements
#   keep      graphs never released (no graph reset, no pool freed)
#   noempty   the caching allocator never emptied between measurements
#   stream    replays timed on a new stream instead of the default stream
#   conn1     CUDA_DEVICE_MAX_CONNECTIONS=1 (one hardware queue)
# Results: $OUT/call13.tgz; summary: python benchmarks/gpu/offset_report.py $W/probe_c*.jsonl
set -u
source benchmarks/gpu/lib.sh
zl_setup 13
LIMIT=235
PROBE="$REPO/benchmarks/gpu/offset_probe.py"
probe() {  # card label [env prefix...] -- probe args
  local card=$1 label=$2; shift 2
  local pre=()
  while [ "$1" != "--" ]; do pre+=("$1"); shift; done
  shift
  CUDA_VISIBLE_DEVICES=$card timeout 60 "${pre[@]}" python3 "$PROBE" --label "c$card $label" "$@" 2>>"$W/probe_c$card.err"
}
card() {
  local c=$1 r=0
  while [ "$(left)" -gt 40 ]; do
    r=$((r + 1))
    probe "$c" base env -- fixed 8
    probe "$c" reuse env -- fixed 8 --reuse
    probe "$c" rsleep env -- fixed 6 --reuse --sleep-ms 500
    probe "$c" keep env -- fixed 8 --keep
    probe "$c" noempty env -- fixed 8 --no-empty
    probe "$c" stream env -- fixed 8 --stream
    probe "$c" conn1 env CUDA_DEVICE_MAX_CONNECTIONS=1 -- fixed 8
  done >> "$W/probe_c$c.jsonl"
  echo "card $c: $r rounds, $(wc -l < "$W/probe_c$c.jsonl") lines; errors: $(grep -c . "$W/probe_c$c.err" 2>/dev/null)"
}
card0() { card 0; }
card1() { card 1; }
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
tail -n 5 "$W"/probe_c*.err 2>/dev/null
python3 "$REPO/benchmarks/gpu/offset_report.py" "$W"/probe_c0.jsonl "$W"/probe_c1.jsonl
echo "end $(date +%T)"
