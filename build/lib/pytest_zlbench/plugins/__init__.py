"""The five pytest plugins of pytest-zlbench, one module each (entry points ``zlbench.*``)."""

from __future__ import annotations
