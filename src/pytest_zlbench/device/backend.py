"""The session's backend: resolved once (``--zl-backend``, the ``zl_backend`` ini, or detected
from the installed torch) from the registry the ``pytest_zlbench_device_register`` hook fills,
and the card pinning of ``--zl-devices``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from .. import _common
from .._common import device_settings_key, set_env
from .settings import DeviceSettings

if TYPE_CHECKING:
    from ..core.backends import Backend, BackendRegistry


def registry(config: pytest.Config) -> BackendRegistry:
    from ..core.backends import BackendRegistry

    found = BackendRegistry()
    register = getattr(config.hook, "pytest_zlbench_device_register", None)
    if register is None:  # zlbench.device is disabled: its hook was never added
        return found
    try:
        register(registry=found)
    except ValueError as exc:  # e.g. a conftest's backend reusing a taken alias
        raise pytest.UsageError(f"pytest_zlbench_device_register: {exc}") from None
    return found


def resolve(config: pytest.Config, known: BackendRegistry, probe: bool = True) -> Backend:
    name = _common.raw(config, "zl_backend")
    if name is None:
        from ..adapters.device_info import detect_backend_name

        name = detect_backend_name(probe_device=probe)
    try:
        return known.resolve(str(name))
    except ValueError as exc:
        refusal = _common.settings_of(config).refusal("zl_backend", f"--zl-backend: {exc}")
        raise pytest.UsageError(refusal) from None


def pin_cards(early_config: pytest.Config) -> None:
    """Make only the ``--zl-devices`` cards visible (one of them to xdist worker ``gwK``), before
    any initial conftest imports torch and initialises the device."""
    devices: tuple[str, ...] = _common.value(early_config, "zl_devices")
    # no device probe before the visibility variable is set: the runtime would ignore it after
    backend = resolve(early_config, registry(early_config), probe=False)
    if not backend.visibility_var:
        raise pytest.UsageError(f"--zl-devices: backend {backend.name} has no cards to select")
    index = _common.worker_index()
    value = ",".join(devices) if index is None else devices[index % len(devices)]
    set_env(early_config, backend.visibility_var, value)


def configure(config: pytest.Config) -> None:
    """Resolve the backend now (``--zl-backend`` or ``--zl-devices`` was given) and stash it."""
    backend = resolve(config, registry(config))
    devices: tuple[str, ...] = _common.value(config, "zl_devices") or ()
    pinned = os.environ.get(backend.visibility_var) if devices and backend.visibility_var else None
    config.stash[device_settings_key] = DeviceSettings(backend, devices, pinned)


def backend_of(config: pytest.Config) -> Backend:
    """The session's backend; detected lazily when no ``--zl-backend`` was given.

    The one place every plugin resolves the backend, also when ``zlbench.device`` itself is
    disabled (then only the built-in backends are known)."""
    settings = config.stash.get(device_settings_key, None)
    if settings is None:
        settings = DeviceSettings(resolve(config, registry(config)), (), None)
        config.stash[device_settings_key] = settings
    return settings.backend
