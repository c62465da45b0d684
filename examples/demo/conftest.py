"""The CPU demo suite: four numpy operators, each timed against a candidate implementation.

Like FlagGems' ``benchmark/`` it marks each test with the operator's name and prints one table
per operator and dtype. It needs numpy only (no torch, no GPU): the ``zl_bench`` fixture times
any callable.

The demo's switch is ``DEMO_SLOW_SOFTMAX=1``: it sends the softmax candidate down a row-by-row
path (several times slower) and leaves every other operator alone, so that an A/B screen of it
has one operator to find::

    pytest --zl-backend=cpu --zl-ab=DEMO_SLOW_SOFTMAX=1 --zl-rounds=3 examples/demo
"""

from __future__ import annotations

import os

# One BLAS thread: the 2-core machines the demo runs on share their cores with the timer, and
# mm's timings with a thread pool drift with the machine's load. Set before numpy is imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

OPS = ("relu", "softmax", "layer_norm", "mm")


def pytest_configure(config):
    for op in OPS:
        config.addinivalue_line("markers", f"{op}: demo operator {op}")
