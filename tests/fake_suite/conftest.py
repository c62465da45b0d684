"""The fake FlagGems suites are run as their own pytest sessions (cwd ``current/`` or ``legacy/``,
each with its own ``pytest.ini``), never collected as part of this project's tests: their
conftests register FlagGems' options and import the stub ``flag_gems`` from their ``src/``."""

from __future__ import annotations

collect_ignore = ["current", "legacy", "_core"]
