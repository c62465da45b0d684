"""zlbench.compat: per-backend skip overrides from ``ops/compat/<backend>.yaml`` (SPEC §9).

Active only when ``--zl-backend`` names a backend with override data and the imported FlagGems
reports the matching vendor. Not yet implemented beyond registration: see the open issue.
"""

from __future__ import annotations
