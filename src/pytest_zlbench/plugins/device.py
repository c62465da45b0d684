"""zlbench.device: ``--zl-backend``, ``--zl-devices``, the backend registry and xdist card pinning.

Each xdist worker ``gwK`` sees only card ``LIST[K % len(LIST)]`` through the backend's
visibility variable. It is set in ``pytest_load_initial_conftests``, before any initial conftest
(FlagGems' imports torch and initialises the device) is imported.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from .. import _common
from .._common import DeviceSpec, device_settings_key, restore_env, set_env

if TYPE_CHECKING:  # imported where used: an inactive plugin imports little
    from ..core.backends import Backend, BackendRegistry

BACKEND_HELP = (
    "Device backend: cuda, musa, rocm, ascend, cpu (aliases nvidia, mthreads/mt, amd/hip, "
    "npu/huawei). Default: detected from the installed torch"
)
DEVICES_HELP = (
    "Card indices to use, e.g. 0,1,3. With -n N, worker gwK sees only card LIST[K %% len]. "
    "Default: all visible cards"
)


class DeviceSettings:
    # a plain class, not a dataclass: building a dataclass at import costs every pytest session
    __slots__ = ("backend", "devices", "pinned")

    def __init__(self, backend: Backend, devices: tuple[str, ...], pinned: str | None) -> None:
        self.backend = backend
        self.devices = devices
        self.pinned = pinned  # the card this process was pinned to, if any


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zlbench-device", "zlbench device: backend and card selection")
    _common.add(parser, group, "--zl-backend", BACKEND_HELP, metavar="NAME")
    _common.add(parser, group, "--zl-devices", DEVICES_HELP, metavar="LIST")


@pytest.hookimpl
def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(DeviceSpec)


def _registry(config: pytest.Config) -> BackendRegistry:
    from ..core.backends import BackendRegistry

    registry = BackendRegistry()
    register = getattr(config.hook, "pytest_zlbench_device_register", None)
    if register is None:  # zlbench.device is disabled: its hook was never added
        return registry
    try:
        register(registry=registry)
    except ValueError as exc:  # e.g. a conftest's backend reusing a taken alias
        raise pytest.UsageError(f"pytest_zlbench_device_register: {exc}") from None
    return registry


def _resolve(config: pytest.Config, registry: BackendRegistry, probe: bool = True) -> Backend:
    name = _common.raw(config, "zl_backend")
    if name is None:
        from ..adapters.device_info import detect_backend_name

        name = detect_backend_name(probe_device=probe)
    try:
        return registry.resolve(str(name))
    except ValueError as exc:
        from ..preflight import value_error

        raise pytest.UsageError(
            value_error(config, "zl_backend", ValueError(f"--zl-backend: {exc}"))
        ) from None


def _zlbench_given(config: pytest.Config) -> bool:
    """Whether any ``--zl-*`` option is given, on the command line or in the ini file."""
    names = vars(config.known_args_namespace).keys() | vars(config.option).keys()
    for name in names:
        if name.startswith("zl_"):
            try:
                if _common.raw(config, name) not in (None, False, [], ""):
                    return True
            except pytest.UsageError:  # a boolean ini value pytest refuses: preflight says so
                return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    if _zlbench_given(early_config):  # die with the parent session; refuse bad or idle options
        from ..preflight import start

        start(early_config)
    devices_raw = _common.raw(early_config, "zl_devices")
    if devices_raw is None:
        return
    from ..core.parsing import parse_devices

    try:
        devices = parse_devices(str(devices_raw))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    # no device probe before the visibility variable is set: the runtime would ignore it after
    backend = _resolve(early_config, _registry(early_config), probe=False)
    if not backend.visibility_var:
        raise pytest.UsageError(f"--zl-devices: backend {backend.name} has no cards to select")
    index = _common.worker_index()
    value = ",".join(devices) if index is None else devices[index % len(devices)]
    set_env(early_config, backend.visibility_var, value)


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    backend_raw = _common.raw(config, "zl_backend")
    devices_raw = _common.raw(config, "zl_devices")
    if backend_raw is None and devices_raw is None:
        return
    from ..core.parsing import parse_devices

    backend = _resolve(config, _registry(config))
    devices = parse_devices(str(devices_raw)) if devices_raw is not None else ()
    pinned = os.environ.get(backend.visibility_var) if devices and backend.visibility_var else None
    config.stash[device_settings_key] = DeviceSettings(backend, devices, pinned)


def backend_of(config: pytest.Config) -> Backend:
    """The session's backend; detected lazily when no ``--zl-backend`` was given.

    The one place every plugin resolves the backend, also when ``zlbench.device`` itself is
    disabled (then only the built-in backends are known)."""
    settings = config.stash.get(device_settings_key, None)
    if settings is None:
        settings = DeviceSettings(_resolve(config, _registry(config)), (), None)
        config.stash[device_settings_key] = settings
    return settings.backend


@pytest.hookimpl
def pytest_report_header(config: pytest.Config) -> list[str] | None:
    settings = config.stash.get(device_settings_key, None)
    if settings is None:
        return None
    line = f"zlbench: backend={settings.backend.name}"
    if settings.devices:
        line += f" devices={','.join(settings.devices)}"
        if settings.backend.visibility_var:
            line += f" ({settings.backend.visibility_var}={settings.pinned})"
    return [line]


@pytest.hookimpl
def pytest_unconfigure(config: pytest.Config) -> None:
    restore_env(config)
    if device_settings_key in config.stash:
        del config.stash[device_settings_key]
