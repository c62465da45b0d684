"""A real-torch suite for card pinning: this conftest imports torch and initialises the device
at import time, as FlagGems' benchmark conftest does. Pinning must already be in place."""

from __future__ import annotations

import os

import torch

VISIBLE_AT_IMPORT = os.environ.get("CUDA_VISIBLE_DEVICES")
if torch.cuda.is_available():
    torch.cuda.init()
    DEVICE_AT_IMPORT = torch.cuda.get_device_properties(0).pci_bus_id
else:
    DEVICE_AT_IMPORT = None


def pytest_report_header(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return [f"pinning conftest [{worker}]: CUDA_VISIBLE_DEVICES={VISIBLE_AT_IMPORT}"]
