#!/usr/bin/env bash
# GPU validation, call 5 (nvidia-h200-x2; run as: bash benchmarks/gpu/call5.sh, carry .fg and .whl):
# issue 5 on the H200. (1) `--zl-inventory` over FlagGems v5.3.4's whole benchmark/ directory
# (collection only). (2) A stratified sample of that inventory (benchmarks/gpu/sample_ops.py: up
# to 3 op ids per Benchmark class) run at --level core with the smoke shape set, 24 xdist workers
# over both cards, a 120 s limit per test; rows recorded, outcomes in JUnit XML. The timer is
# ours with a tiny budget: this run asks "does the operator produce rows", not "how fast".
# Results: $OUT/call5.tgz
set -u
W=/tmp/w5; mkdir -p "$W"; REPO=$PWD; START=$(date +%s)
exec > >(tee "$W/call5.log") 2>&1
pack() { tar -czf "$OUT/call5.tgz" -C /tmp --exclude='*/triton_cache/*' --exclude='*/code_cache/*' w5; }
trap pack EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
SMOKE=/tmp/site/pytest_zlbench/ops/shapes/smoke.yaml
cd .fg
echo "===== inventory ($(date +%T))"
timeout 150 python3 -m pytest benchmark --zl-inventory="$W/inventory.tsv" -p no:cacheprovider -q 2>&1 | tail -n 15
INV="$W/inventory.tsv"; [ -s "$INV" ] || { echo "no inventory: sampling the static one"; INV=/tmp/site/pytest_zlbench/ops/inventory_static.tsv; }
wc -l "$INV"
python3 "$REPO/benchmarks/gpu/sample_ops.py" pick "$INV" > "$W/sample.txt"
left=$(( 560 - ($(date +%s) - START) )); echo "===== sample: $(wc -l < "$W/sample.txt") test functions, ${left}s left ($(date +%T))"
timeout -s INT -k 20 "$left" python3 -m pytest $(cat "$W/sample.txt") --level core --shape_file="$SMOKE" \
  -n 24 --zl-devices=0,1 --zl-out="$W/sample" --zl-graph-replays=3 --zl-graph-budget-ms=2 \
  --timeout=120 --junitxml="$W/sample.xml" -p no:cacheprovider -q -rfEs > "$W/sample.log" 2>&1
echo "rc=$? sample wall: $(( $(date +%s) - START )) s since start"
tail -n 5 "$W/sample.log"
python3 "$REPO/benchmarks/gpu/sample_ops.py" report "$INV" "$W/sample" "$W/sample.xml" > "$W/sample_report.tsv" 2>&1
tail -n 3 "$W/sample_report.tsv"
echo "end $(date +%T)"
