#!/usr/bin/env bash
# GPU validation, call 1 (nvidia-h200-x2): card pinning, graph-timer smoke on FlagGems, capture
# fallback, fatal device errors, autotune record/replay. Results: $OUT/call1.tgz
set -u
W=/tmp/w; mkdir -p "$W"; REPO=$PWD
exec > >(tee "$W/call1.log") 2>&1
pack() { tar -czf "$OUT/call1.tgz" -C /tmp --exclude='*/triton_cache/*' --exclude='*/code_cache/*' w; }
trap pack EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
nvidia-smi -L; nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cards", torch.cuda.device_count())'
python3 -m pytest --help | grep -c -- '--zl-'
step() { echo; echo "===== $1 ($(date +%T))"; }

step "pinning: -n 2 --zl-devices=0,1"
(cd benchmarks/gpu/pinning && timeout 150 python3 -m pytest -n 2 --zl-devices=0,1 --zl-out="$W/pin" -p no:cacheprovider -rA -q)

step "fatal device error, same process"
(cd benchmarks/gpu/fatal && timeout 100 python3 -m pytest --zl-out="$W/fatal" -p no:cacheprovider -q)
step "fatal device error, one child per operator (A/B)"
(cd benchmarks/gpu/fatal && timeout 150 python3 -m pytest --zl-ab=ZL_DUMMY=1 --zl-out="$W/fatal_ab" --zl-timeout=100 -p no:cacheprovider -q)

cd .fg
step "smoke: abs fp16 graph timer"
timeout 150 python3 -m pytest benchmark/test_abs.py --level core --dtypes float16 --zl-out="$W/smoke" -p no:cacheprovider -q
step "fallback: nonzero, unique"
timeout 200 python3 -m pytest benchmark/test_nonzero.py benchmark/test_unique.py --level core --zl-out="$W/fallback" -p no:cacheprovider -q
step "record"
SEL="benchmark/test_abs.py::test_abs benchmark/test_mul.py::test_mul benchmark/test_mm.py::test_mm"
timeout 200 python3 -m pytest $SEL --level core --dtypes float16 --zl-out="$W/rec" -p no:cacheprovider -q
step "replay"
timeout 200 python3 -m pytest $SEL --level core --dtypes float16 --zl-out="$W/rep" --zl-replay-from="$W/rec" -p no:cacheprovider -q
for d in rec rep; do echo "$d ttgir files: $(find "$W/$d/triton_cache" -name '*.ttgir' | wc -l)"; done
step "done"
