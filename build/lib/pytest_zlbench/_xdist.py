"""The only module that looks at pytest-xdist's worker state."""

from __future__ import annotations

import os

import pytest


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def worker_id(config: pytest.Config | None = None) -> str:
    if config is not None and is_worker(config):
        return str(config.workerinput["workerid"])  # type: ignore[attr-defined]
    return os.environ.get("PYTEST_XDIST_WORKER", "controller")


def worker_index() -> int | None:
    """``gwK`` → K from the environment xdist sets before a worker's plugins load."""
    wid = os.environ.get("PYTEST_XDIST_WORKER", "")
    if wid.startswith("gw") and wid[2:].isdigit():
        return int(wid[2:])
    return None
