"""ruff's banned-API rule (TID251) guards ``core/`` with no glob hole: a probe ``import pytest``
in ``core/`` fails ``ruff check`` under the project's own configuration, and the same probe in
another package passes (a per-file pattern such as ``src/pytest_zlbench/*.py`` once matched
``core/*.py`` too, so that ``import pytest`` in ``core/`` passed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = "from __future__ import annotations\n\nimport {module}\n\nPROBE = {module}\n"

pytest.importorskip("ruff")


def ruff_on(tmp_path: Path, relative: str, module: str) -> subprocess.CompletedProcess[str]:
    """``ruff check`` of a probe importing ``module`` at ``relative``, in a copy of the
    project's ``pyproject.toml`` (its patterns are relative to the project's root)."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    probe = tmp_path / relative
    probe.parent.mkdir(parents=True)
    probe.write_text(PROBE.format(module=module), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "TID251", relative],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("module", ["pytest", "torch", "triton", "flag_gems"])
def test_a_probe_import_in_core_fails_ruff(tmp_path: Path, module: str) -> None:
    done = ruff_on(tmp_path, "src/pytest_zlbench/core/probe.py", module)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"TID251 `{module}` is banned" in done.stdout


@pytest.mark.parametrize(
    "relative", ["src/pytest_zlbench/probe.py", "src/pytest_zlbench/screen/probe.py"]
)
def test_the_same_probe_elsewhere_passes(tmp_path: Path, relative: str) -> None:
    done = ruff_on(tmp_path, relative, "pytest")
    assert done.returncode == 0, done.stdout + done.stderr
