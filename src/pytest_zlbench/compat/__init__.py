"""The work of ``zlbench.compat``: lifting skips per backend, the stale-override report and
``--zl-inventory``. Imported only when that plugin has something to do."""

from __future__ import annotations
