"""zlbench.device: ``--zl-backend``, ``--zl-devices``, the backend registry and xdist card pinning.

Each xdist worker ``gwK`` sees only card ``LIST[K % len(LIST)]`` through the backend's
visibility variable. It is set in ``pytest_load_initial_conftests``, before any initial conftest
(FlagGems' imports torch and initialises the device) is imported. The work lives in
``pytest_zlbench.device``, imported only when one of these options is given.
"""

from __future__ import annotations

import pytest

from .. import _common
from .._common import DeviceSpec, device_settings_key, restore_env


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zlbench-device", "zlbench device: backend and card selection")
    _common.add_options(parser, group, "device")  # core.options.OPTIONS


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
    try:
        return bool(_common.given(config))
    except pytest.UsageError:  # a boolean ini value pytest refuses: preflight says so
        return True


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    if _zlbench_given(early_config):  # die with the parent session; refuse bad or idle options
        from ..preflight import start

        start(early_config)
    if _common.raw(early_config, "zl_devices") is None:
        return
    from ..device.backend import pin_cards

    pin_cards(early_config)


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    if _common.raw(config, "zl_backend") is None and _common.raw(config, "zl_devices") is None:
        return
    from ..device.backend import configure

    configure(config)


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
