"""The baseline store a session names (``--zl-store``, else ``.zlbench`` in the rootdir), and
the stored runs ``--zl-compare-to`` pairs with: what both the recorded run's saving
(``recording.saving``) and ``--zl-compare`` (``screen.compare``) read."""

from __future__ import annotations

from pathlib import Path

import pytest

from .. import _common
from ..core.store import STORE_DIR, Store, StoreError


def store_of(config: pytest.Config) -> Store:
    """``--zl-store`` (relative to the invocation directory), else ``.zlbench`` in the rootdir."""
    value = _common.raw(config, "zl_store")
    if value:
        return Store(Path(config.invocation_params.dir) / str(value))
    return Store(Path(config.rootpath) / STORE_DIR)


def stored_run(config: pytest.Config, name: str) -> Path:
    """The stored run ``name`` (a usage error when absent or a screen)."""
    return stored_path(store_of(config), name, "--zl-compare-to")


def stored_path(store: Store, name: str, what: str) -> Path:
    try:
        entry = store.find(name)
    except StoreError as exc:
        raise pytest.UsageError(f"{what}: {exc}") from None
    if entry.kind != "run":
        raise pytest.UsageError(
            f"{what} {name}: a stored {entry.kind}, not a run; only runs are paired"
        )
    return store.path_of(entry)
