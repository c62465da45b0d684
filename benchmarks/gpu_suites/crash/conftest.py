"""A batch of three operators for the screen's crash containment: the middle one triggers a
device-side assert (a sticky CUDA error: its side worker's context is lost), the ones before and
after it are ordinary ops that must be measured on both sides."""

from __future__ import annotations

import torch  # noqa: F401  (imported at conftest import, like FlagGems)
