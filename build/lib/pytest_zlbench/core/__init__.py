"""Pure core of pytest-zlbench: parsing, records, statistics, fingerprints, verdicts, rendering.

Nothing in this package imports pytest, torch, triton or flag_gems; it is usable from a script
or a notebook and is what the plugins hand plain data to.
"""

from __future__ import annotations
