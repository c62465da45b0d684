"""Environment changes made by the plugins, recorded so that unconfigure can undo them."""

from __future__ import annotations

import os

import pytest

from ._stash import saved_env_key


def set_env(config: pytest.Config, var: str, value: str) -> None:
    """Set ``var`` for this session; the previous value comes back at unconfigure."""
    saved = config.stash.setdefault(saved_env_key, {})
    saved.setdefault(var, os.environ.get(var))
    os.environ[var] = value


def restore_env(config: pytest.Config) -> None:
    saved = config.stash.get(saved_env_key, None)
    if saved is None:
        return
    for var, value in saved.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
    del config.stash[saved_env_key]
