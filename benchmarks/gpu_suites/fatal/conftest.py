"""Two operators for the fatal-error check: the first triggers a device-side assert (a sticky
CUDA error that kills the context), the second is an ordinary op measured after it."""

from __future__ import annotations

import torch  # noqa: F401  (imported at conftest import, like FlagGems)
