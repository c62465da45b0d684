"""Generator isolation check: an operator whose graph capture is invalidated (a host sync
inside it), then operators that draw random numbers on the device in the same process."""

from __future__ import annotations

import torch  # noqa: F401  (imported at conftest import, like FlagGems)
