"""Hook specifications of pytest-zlbench, one class per plugin. Each plugin registers only its
own class in ``pytest_addhooks``, so disabling a plugin also removes its hooks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # an annotation only: plugins import hookspecs even when inactive
    from .core.backends import BackendRegistry


class DeviceSpec:
    @pytest.hookspec
    def pytest_zlbench_device_register(self, registry: BackendRegistry) -> None:
        """Add backends to ``registry`` with ``registry.add(Backend(...))``.

        Called once per session, before ``--zl-backend`` is resolved. Backends added from a
        conftest are known to ``--zl-backend``; to pin cards (``--zl-devices``) before initial
        conftests import torch, register from an installed plugin instead.

        .. versionadded:: 0.1
        """


class IdentitySpec:
    @pytest.hookspec
    def pytest_zlbench_identity_update(self, config: pytest.Config, info: dict[str, Any]) -> None:
        """Amend the informational fields of a run identity before it is written.

        :param info: the mutable dict of informational fields (``versions``, ``host``, ...).
            Caliber fields cannot be changed here.

        .. versionadded:: 0.1
        """
