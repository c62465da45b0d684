"""The session's device settings as kept in the stash (``_common.device_settings_key``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.backends import Backend


class DeviceSettings:
    # a plain class, not a dataclass: the settings of one session, built once
    __slots__ = ("backend", "devices", "pinned")

    def __init__(self, backend: Backend, devices: tuple[str, ...], pinned: str | None) -> None:
        self.backend = backend
        self.devices = devices
        self.pinned = pinned  # the card this process was pinned to, if any
