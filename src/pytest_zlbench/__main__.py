"""``python -m pytest_zlbench``: the ``zlbench`` command, where the venv's scripts are not on the
PATH."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
