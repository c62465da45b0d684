"""``src/flag_gems`` of a fake FlagGems checkout: the stub both layouts share, ``fake_gems`` in
``tests/fake_suite/_core`` (on ``pythonpath`` in ``pytest.ini``), installed under this name."""

from __future__ import annotations

import sys

import fake_gems

sys.modules[__name__] = fake_gems  # ``import flag_gems`` and ``flag_gems.runtime`` resolve there
