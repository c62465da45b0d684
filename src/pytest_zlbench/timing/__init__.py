"""The work of ``zlbench.timing``: the session's timer, the FlagGems adapter's session and the
``zl_bench`` fixture's value. Imported only when the session measures or uses ``zl_bench``."""

from __future__ import annotations
