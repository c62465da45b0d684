"""The work of ``zlbench.device``: the backend registry, backend resolution and card pinning.

Below every plugin: whoever needs the session's backend calls :func:`backend.backend_of`.
"""

from __future__ import annotations
