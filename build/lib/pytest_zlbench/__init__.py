"""pytest-zlbench: pytest plugins that make an operator benchmark suite a measurement instrument.

The plugins are ``zlbench.device``, ``zlbench.timing``, ``zlbench.compat``, ``zlbench.identity``
and ``zlbench.ab``; the pure analysis API is :mod:`pytest_zlbench.core`.
"""

from __future__ import annotations

__version__ = "0.1.0"
