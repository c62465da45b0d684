#!/usr/bin/env bash
# GPU validation, call 5 (nvidia-h200-x2; run as: bash benchmarks/gpu/call5.sh, carry .fg and .whl):
# issue 5 on the H200. (1) `--zl-inventory` over FlagGems v5.3.4's whole benchmark/ directory
# (collection only). (2) A stratified sample of that inventory (benchmarks/gpu/sample_ops.py: up
# to 3 op ids per Benchmark class) run at --level core with the smoke shape set, 24 xdist workers
# over both cards, a 240 s limit per test; rows recorded, outcomes in JUnit XML. The timer is
# ours with a tiny budget: this run asks "does the operator produce rows", not "how fast".
# (3) With the time left, the sample's failed test functions once more (a second pass; a
# worker that lost its device context restarts, so a failure there is the test's own).
# First run: 2026-11-29 (before the generator fix and worker restarts; docs/VALIDATION.md).
# Usage: bash benchmarks/gpu/call5.sh [K/N [EXTRA]]: run only shard K of N of the sample (every
# N-th test function from the K-th), so that a sample too long for one 600 s call takes N calls,
# plus the functions listed in the file EXTRA (an earlier shard's unrun ones); the report then
# takes every shard's run directories and JUnit files. Functions listed in slow_first.txt (those
# that took >= 50 s on the H200) start first, so the long ones do not make the tail.
# Results: $OUT/call5.tgz
set -u
SHARD=${1:-1/1}; K=${SHARD%/*}; N=${SHARD#*/}
source benchmarks/gpu/lib.sh
zl_setup 5
SMOKE=/tmp/site/pytest_zlbench/ops/shapes/smoke.yaml
cd .fg
echo "===== inventory ($(date +%T))"
timeout 150 python3 -m pytest benchmark --zl-inventory="$W/inventory.tsv" -p no:cacheprovider -q 2>&1 | tail -n 15
INV="$W/inventory.tsv"; [ -s "$INV" ] || { echo "no inventory: sampling the static one"; INV=/tmp/site/pytest_zlbench/ops/inventory_static.tsv; }
wc -l "$INV"
python3 "$REPO/benchmarks/gpu/sample_ops.py" pick "$INV" | awk -v k="$K" -v n="$N" '(NR - 1) % n == k - 1' > "$W/shard.txt"
[ -n "${2:-}" ] && grep -v '^#' "$REPO/$2" >> "$W/shard.txt"
# slow ones first, each followed by a quick one: xdist's first batch gives every worker two
# consecutive items, so this way no worker starts with two slow ones
grep -v '^#' "$REPO/benchmarks/gpu/slow_first.txt" | grep -Fxf "$W/shard.txt" > "$W/slow.txt"
grep -vFxf "$W/slow.txt" "$W/shard.txt" | awk '!seen[$0]++' > "$W/quick.txt"
paste -d '\n' "$W/slow.txt" "$W/quick.txt" | grep -v '^$' > "$W/sample.txt"
left=$(( 480 - ($(date +%s) - START) )); echo "===== sample shard $SHARD: $(wc -l < "$W/sample.txt") test functions, ${left}s left ($(date +%T))"
timeout -s INT -k 20 "$left" python3 -m pytest $(cat "$W/sample.txt") --level core --shape_file="$SMOKE" \
  -n 28 --zl-devices=0,1 --zl-out="$W/sample" --zl-graph-replays=3 --zl-graph-budget-ms=2 \
  --timeout=420 --junitxml="$W/sample.xml" -p no:cacheprovider -q -rfEs > "$W/sample.log" 2>&1
echo "rc=$? sample wall: $(( $(date +%s) - START )) s since start"
tail -n 5 "$W/sample.log"
python3 "$REPO/benchmarks/gpu/sample_ops.py" failed "$INV" "$W/sample.xml" > "$W/failed.txt"
left=$(( 545 - ($(date +%s) - START) ))
if [ -s "$W/failed.txt" ] && [ "$left" -gt 60 ]; then
  echo "===== second pass: $(wc -l < "$W/failed.txt") failed functions, ${left}s left"
  timeout -s INT -k 10 "$left" python3 -m pytest $(cat "$W/failed.txt") --level core --shape_file="$SMOKE" \
    -n 12 --zl-devices=0,1 --zl-out="$W/sample2" --zl-graph-replays=3 --zl-graph-budget-ms=2 \
    --timeout=240 --junitxml="$W/sample2.xml" -p no:cacheprovider -q -rfEs > "$W/sample2.log" 2>&1
  echo "rc=$? second pass done $(( $(date +%s) - START )) s since start"; tail -n 3 "$W/sample2.log"
fi
python3 "$REPO/benchmarks/gpu/sample_ops.py" report "$INV" --runs "$W/sample" "$W/sample2" \
  --junit "$W/sample.xml" "$W/sample2.xml" > "$W/sample_report.tsv" 2>&1
tail -n 3 "$W/sample_report.tsv"
echo "end $(date +%T)"
