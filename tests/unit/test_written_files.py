"""Files the product writes atomically take the mode the user's umask gives a new file."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_zlbench.core.records import write_atomic


@pytest.fixture
def restore_umask() -> Iterator[None]:
    before = os.umask(0o022)
    os.umask(before)
    yield
    os.umask(before)


@pytest.mark.parametrize(("mask", "mode"), [(0o002, 0o664), (0o077, 0o600), (0o022, 0o644)])
def test_a_file_written_atomically_has_the_mode_the_umask_says(
    tmp_path: Path, restore_umask: None, mask: int, mode: int
) -> None:
    os.umask(mask)
    write_atomic(tmp_path / "a.json", "{}\n")
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == mode
    # as a plain open() creates one
    (tmp_path / "b.json").write_text("{}\n")
    assert stat.S_IMODE((tmp_path / "b.json").stat().st_mode) == mode
