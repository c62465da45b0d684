"""The work of ``zlbench.identity``: recording one run directory (``--zl-out``) with its rows,
log, summary, IR fingerprint, autotune pins and run identity. Imported only when a run is
recorded, so that an installed but inactive plugin costs a pytest session little."""

from __future__ import annotations
