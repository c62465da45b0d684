"""``pytest_zlbench.core`` must stay importable without pytest, torch, triton or flag_gems."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest_zlbench.core

HEAVY = ("pytest", "_pytest", "torch", "triton", "flag_gems")

PROBE = """
import importlib, json, pkgutil, sys
import pytest_zlbench.core as core
names = sorted(m.name for m in pkgutil.iter_modules(core.__path__, core.__name__ + "."))
for name in names:
    importlib.import_module(name)
roots = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps({"imported": names, "roots": roots}))
"""


def test_core_imports_nothing_heavy() -> None:
    expected = sorted(
        m.name for m in pkgutil.iter_modules(pytest_zlbench.core.__path__, "pytest_zlbench.core.")
    )
    assert "pytest_zlbench.core.records" in expected
    out = subprocess.run(
        [sys.executable, "-I", "-c", PROBE],  # -I: no PYTHONPATH, no user site, no cwd
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    data = json.loads(out.stdout)
    assert data["imported"] == expected
    leaked = sorted(set(data["roots"]) & set(HEAVY))
    assert leaked == [], f"core imports {leaked}"
