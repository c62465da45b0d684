"""Every StashKey shared across hooks, one typed constant each."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .core.records import Row
    from .plugins.device import DeviceSettings  # noqa: F401 (used in a string annotation)
    from .plugins.timing import TimingSettings  # noqa: F401 (used in a string annotation)

device_settings_key = pytest.StashKey["DeviceSettings"]()
#: environment variables a plugin changed, with their previous values (None = was unset)
saved_env_key = pytest.StashKey[dict[str, "str | None"]]()
timing_settings_key = pytest.StashKey["TimingSettings"]()
#: rows measured during one test item (call phase), filled by zlbench.timing
item_rows_key = pytest.StashKey[list["Row"]]()
run_recorder_key = pytest.StashKey[Any]()
ab_controller_key = pytest.StashKey[Any]()
