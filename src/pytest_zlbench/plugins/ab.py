"""zlbench.ab: ``--zl-ab``, ``--zl-rounds``, ``--zl-compare``: the A/B screen (SPEC §7, §8)."""

from __future__ import annotations
