#!/usr/bin/env bash
# GPU validation, call 23 (nvidia-h200-x2; run as: bash benchmarks/gpu/call23.sh, carry .fg and .whl).
# Written 2026-11-30 (session 12) after call 22. Show 1's selection (the committed seed replayed,
# 30 x 10 ms) with the settle build S (a measurement spread over 5 % is settled for 1 s and
# timed again) against the build before (.whl/before: the primer, no settle):
#  card 0: S1 B5 S2 B6 (interleaved);  card 1: S3 S4, then gemm_probe.py with 4 s bursts.
# Results: $OUT/call23.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 23
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site_before .whl/before/*.whl .whl/sqlalchemy-*.whl .whl/greenlet-*.whl .whl/pytest_timeout-*.whl || exit 1
LIMIT=330
COMMON="--level core -p no:cacheprovider -q -rfEs --zl-replay-from=$SEED --zl-graph-replays=30 --zl-graph-budget-ms=10"
NOISE="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_sum.py::test_sum
  benchmark/test_fft.py::test_perf_fft benchmark/test_mm.py::test_mm"
one() {  # name
  local r=$1 s path=/tmp/site
  s=$(lim 110) || { echo "$r: skipped, no time left"; return; }
  [ "$s" -lt 80 ] && { echo "$r: skipped, $s s left"; return; }
  case $r in B*) path=/tmp/site_before;; esac
  local t0; t0=$(date +%s)
  PYTHONPATH=$path timeout -s INT -k 10 "$s" python3 -m pytest $NOISE $COMMON --zl-out="$W/$r" > "$W/$r.log" 2>&1
  echo "$r: rc=$? $(( $(date +%s) - t0 )) s: $(tail -n 1 "$W/$r.log")"
}
card0() { export CUDA_VISIBLE_DEVICES=0; cd .fg; for r in S1 B5 S2 B6; do one $r; done; }
card1() {
  export CUDA_VISIBLE_DEVICES=1
  (cd .fg; for r in S3 S4; do one $r; done)
  s=$(lim 60) && timeout -s INT "$s" python3 benchmarks/gpu/gemm_probe.py --seconds 4 --idle 1 --bursts 1 \
    > "$W/gemm4s.jsonl" 2> "$W/gemm4s.err"; echo "gemm4s: rc=$?"
}
echo "start $(date +%T)"
zl_both card0 card1
cat "$W/card0.log" "$W/card1.log"
python3 "$REPO/benchmarks/timer_noise.py" "S1 vs S2=$W/S1,$W/S2" "S3 vs S4=$W/S3,$W/S4" \
  "B5 vs B6=$W/B5,$W/B6" 2>&1
python3 - "$W" <<'PY'
import json, sys
from pathlib import Path
w = Path(sys.argv[1])
for r in ("S1", "S2", "S3", "S4"):
    p = w / r / "rows.jsonl"
    if not p.exists():
        continue
    rows = [json.loads(l) for l in p.read_text().splitlines()]
    print(r, "mm 4096/2048 fp16/bf16 (us, gems / torch):", "; ".join(
        f"{x['dtype'][:4]} {x['latency']*1000:.1f}/{x['latency_base']*1000:.1f}" for x in rows
        if x["op"] == "mm" and x["dtype"] != "float32" and ("4096" in x["shape"] or "2048" in x["shape"])))
for line in open(w / "gemm4s.jsonl"):
    r = json.loads(line); us = r["us"]; q = len(us) // 16 or 1
    print(f"{r['dtype']:8} {r['n']}: sixteenths", " ".join(f"{sorted(us[i:i+q])[len(us[i:i+q])//2]:.1f}" for i in range(0, len(us), q)))
PY
grep -h timer_settings "$W"/S1/run_identity.json | head -1
echo "end $(date +%T)"
