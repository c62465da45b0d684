#!/usr/bin/env bash
# GPU validation, call 7 (nvidia-h200; run as: bash benchmarks/gpu/call7.sh, carry .fg and .whl):
# the generator-isolation fix on a card. (1) benchmarks/gpu/rng: a capture invalidated by a host
# sync, then random draws in the same process. (2) FlagGems, one process: ctc_loss_backward
# (whose invalidated capture poisoned its xdist worker's generator in call 5), then embedding and
# glu, which draw random inputs. Results: $OUT/call7.tgz
set -u
source benchmarks/gpu/lib.sh
zl_setup 7
(cd benchmarks/gpu/rng && timeout 60 python3 -m pytest --zl-out="$W/rng" -p no:cacheprovider -q -rA 2>&1 | tail -n 8)
cd .fg
timeout 120 python3 -m pytest benchmark/test_ctc_loss.py::test_ctc_loss_backward benchmark/test_embedding.py::test_embedding \
  benchmark/test_glu.py::test_glu --level core --shape_file=/tmp/site/pytest_zlbench/ops/shapes/smoke.yaml \
  --zl-out="$W/fg" -p no:cacheprovider -q -rA 2>&1 | grep -E "PASSED|FAILED|ERROR|passed|failed|Offset" | tail -n 12
grep -c BENCHMARK_DIRECT_NO_CUDAGRAPH "$W/fg/run.log"
