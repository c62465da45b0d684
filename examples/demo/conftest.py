"""The CPU demo suite: a few torch operators, each timed against a candidate implementation.

Like FlagGems' ``benchmark/`` it imports torch when the conftest loads, marks each test with the
operator's name, and prints one table per operator and dtype.
"""

from __future__ import annotations

import os

import torch

OPS = ("relu", "softmax", "layer_norm", "mm")

torch.manual_seed(0)
# Two intra-op threads unless OMP_NUM_THREADS says otherwise: the demo's A/B switch is
# OMP_NUM_THREADS=1, which then changes how every operator runs.
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))


def pytest_configure(config):
    for op in OPS:
        config.addinivalue_line("markers", f"{op}: demo operator {op}")
