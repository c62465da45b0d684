#!/usr/bin/env bash
# GPU validation, call 12 (nvidia-h200-x2; run as: bash benchmarks/gpu/call12.sh, carry .fg and .whl).
# Written 2026-11-30 (fifth session). Issue 3, show 1: what makes the per-process offset of
# microsecond graph timings, and the in-process step (calls 10-11: measurements 1-3 of every
# process 0.95 us, the fourth on 1.12 us)? benchmarks/gpu/offset_probe.py in fresh processes,
# the same variants on both cards, interleaved round by round so that drift in time falls on all
# of them alike:
#   base      fixed tensors, 8 measurements (as calls 10-11)
#   warm      6 throwaway measurements of neg first: does the step follow the number of graphs?
#   reuse     one graph timed 8 times: does it follow elapsed work rather than captures?
#   sleep     500 ms idle between measurements: a power state?
#   calls200  200 calls per graph instead of 2000: does the graph's size matter?
#   eager     CUDA_MODULE_LOADING=EAGER: lazy module loading?
#   pin1      the process on one CPU (2 for card 0, 10 for card 1; taskset): host scheduling?
#   big       64x512x512 (about 21 us: rows >= 10 us moved by up to 5 % in call 11), fixed
#   bigmove   the same, new tensors past a new pad each time: physical placement in L2?
# and first, on each card, one process measuring for 45 s (drift in time within a process).
# Results: $OUT/call12.tgz; summary: python benchmarks/gpu/offset_report.py $W/probe_c*.jsonl
set -u
source benchmarks/gpu/lib.sh
zl_setup 12
LIMIT=530
echo "== topology"
nvidia-smi topo -m 2>&1 | head -n 12
lscpu 2>&1 | grep -iE "^(CPU\(s\)|Model name|NUMA|Thread|Core|Socket)" 
command -v taskset numactl
for c in 0 1; do
  bus=$(nvidia-smi -i $c --query-gpu=pci.bus_id --format=csv,noheader | tr 'A-F' 'a-f' | sed 's/^0000//')
  echo "card $c: $bus numa_node=$(cat /sys/bus/pci/devices/$bus/numa_node 2>&1) local_cpulist=$(cat /sys/bus/pci/devices/$bus/local_cpulist 2>&1)"
done
PROBE="$REPO/benchmarks/gpu/offset_probe.py"
probe() {  # card label [env/taskset prefix...] -- probe args
  local card=$1 label=$2; shift 2
  local pre=()
  while [ "$1" != "--" ]; do pre+=("$1"); shift; done
  shift
  CUDA_VISIBLE_DEVICES=$card timeout 60 "${pre[@]}" python3 "$PROBE" --label "c$card $label" "$@" 2>>"$W/probe_c$card.err"
}
card() {
  local c=$1 cpu=$(( $1 * 8 + 2 ))
  probe "$c" long env -- fixed 8 --seconds 45 >> "$W/probe_c$c.jsonl"
  local r=0
  while [ "$(left)" -gt 60 ]; do
    r=$((r + 1))
    probe "$c" base env -- fixed 8
    probe "$c" warm env -- fixed 8 --warm-graphs 6
    probe "$c" reuse env -- fixed 8 --reuse
    probe "$c" sleep env -- fixed 8 --sleep-ms 500
    probe "$c" calls200 env -- fixed 8 --max-calls 200
    probe "$c" eager env CUDA_MODULE_LOADING=EAGER -- fixed 8
    probe "$c" pin1 taskset -c "$cpu" -- fixed 8
    probe "$c" big env -- fixed 8 --size 64x512x512
    probe "$c" bigmove env -- moving 8 --size 64x512x512
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
