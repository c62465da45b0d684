"""Are the graph timer's per-row offsets on microsecond rows per process or per measurement?
(issue 3, call 16) The same three small operators measured as 12 rows each in one process,
with host work between rows as in FlagGems' tests; several processes of it."""

from __future__ import annotations

import torch  # noqa: F401  (imported at conftest import, like FlagGems)
