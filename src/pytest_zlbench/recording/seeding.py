"""The same random draws on both sides of a screen and in every run: before each test, the
random generators of Python, NumPy and torch are seeded from a fixed base and the test's node id.

FlagGems' benchmarks draw their arguments at random (``test_pad``, ``test_diag``,
``test_linspace``, ``test_select_scatter``): unseeded, the two sides of a screen time different
inputs. Seeding per test, not once per session, gives a test the same draws whatever ran before
it in its process (a side worker serves many operators). Only generators of modules the suite
has already imported are seeded: nothing is imported here.
"""

from __future__ import annotations

import random
import sys
import zlib
from typing import Any

#: the base every test's seed is derived from; recorded in the run identity
BASE_SEED = 1234


def seed_of(nodeid: str, base: int = BASE_SEED) -> int:
    """The seed of the test ``nodeid``: stable across processes and Python versions."""
    return (base + zlib.crc32(nodeid.encode("utf-8"))) % 2**32


def seed_generators(seed: int) -> list[str]:
    """Seed every generator that is loaded; returns their names."""
    seeded = ["random"]
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)
        seeded.append("numpy")
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)  # every device's default generator too
        seeded.append("torch")
    return seeded


def describe() -> dict[str, Any]:
    """The identity's ``seed`` field."""
    return {"base": BASE_SEED, "per_test": "base + crc32(node id), before each test's setup"}
