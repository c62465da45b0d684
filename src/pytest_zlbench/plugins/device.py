"""zlbench.device: ``--zl-backend``, ``--zl-devices``, the backend registry and xdist card pinning.

Each xdist worker ``gwK`` sees only card ``LIST[K % len(LIST)]`` through the backend's
visibility variable. It is set in ``pytest_load_initial_conftests``, before any initial conftest
(FlagGems' imports torch and initialises the device) is imported. The work lives in
``pytest_zlbench.device``, imported only when one of these options is given.
"""

from __future__ import annotations

import pytest

from .. import _common
from .._common import DROP, RESET, DeviceSpec, device_settings_key, restore_env

BACKEND_HELP = (
    "Device backend: cuda, musa, rocm, ascend, cpu (aliases nvidia, mthreads/mt, amd/hip, "
    "npu/huawei). Default: detected from the installed torch"
)
DEVICES_HELP = (
    "Card indices to use, e.g. 0,1,3. With -n N, worker gwK sees only card LIST[K %% len]. "
    "Default: all visible cards"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zlbench-device", "zlbench device: backend and card selection")
    # a screen names the backend on each child's command line, and pins no card in a child:
    # the child inherits the card its screen (or xdist worker) was pinned to
    _common.add(parser, group, "--zl-backend", BACKEND_HELP, child=DROP, metavar="NAME")
    _common.add(parser, group, "--zl-devices", DEVICES_HELP, child=RESET, metavar="LIST")


@pytest.hookimpl
def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(DeviceSpec)


def _zlbench_given(config: pytest.Config) -> bool:
    """Whether any ``--zl-*`` option is given, on the command line or in the ini file; an
    empty value on the command line counts (preflight refuses it: an unset shell variable)."""
    cli = {**vars(config.option), **vars(config.known_args_namespace)}
    for name, value in cli.items():
        if name.startswith("zl_") and (value == "" or (isinstance(value, list) and "" in value)):
            return True
    for name in cli:
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
    from ..device.backend import pin_cards

    pin_cards(early_config, devices_raw)


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    backend_raw = _common.raw(config, "zl_backend")
    devices_raw = _common.raw(config, "zl_devices")
    if backend_raw is None and devices_raw is None:
        return
    from ..device.backend import configure

    configure(config, devices_raw)


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
