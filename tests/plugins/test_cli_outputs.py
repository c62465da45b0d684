"""``zlbench``'s output folders and its behaviour as a shell command: one rule for every output
folder (a folder that holds results is refused, never overwritten; no ``-o``: a fresh
``runs/zl_<time>``), ``--store`` on either side of the command, a closed pipe, and
``python -m pytest_zlbench``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli_errors import refused, two_runs, zlbench

from pytest_zlbench.core.rundir import GIVE_NEW
from pytest_zlbench.core.store import STORE_DIR


def test_compare_into_a_folder_that_holds_a_comparison_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It overwrote the earlier comparison without a word, while merge refused."""
    a, b = two_runs(tmp_path)
    rc, _, _ = zlbench(capsys, "compare", a, b, "-o", tmp_path / "cmp")
    assert rc == 0
    before = (tmp_path / "cmp" / "screen.tsv").read_bytes()
    _, error = refused(capsys, "compare", b, a, "-o", tmp_path / "cmp")
    assert error == f"-o {tmp_path / 'cmp'}: already holds a comparison; {GIVE_NEW}"
    assert (tmp_path / "cmp" / "screen.tsv").read_bytes() == before


def test_merge_into_a_folder_that_holds_something_names_the_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "x").write_text("")
    _, error = refused(capsys, "merge", tmp_path / "part", "-o", tmp_path / "m")
    assert error == f"-o {tmp_path / 'm'}: not empty; {GIVE_NEW}"


def test_without_o_each_compare_writes_a_fresh_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = two_runs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert zlbench(capsys, "compare", a, b)[0] == 0
    (made,) = (tmp_path / "runs").iterdir()
    assert made.name.startswith("zl_")
    assert (made / "screen.tsv").is_file()


@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_store_is_taken_before_or_after_the_command(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    before: bool,
) -> None:
    """``zlbench list --store X`` was refused: the option was known before the command only."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "elsewhere"
    args = ("--store", store, "list") if before else ("list", "--store", store)
    rc, out, err = zlbench(capsys, *args)
    assert (rc, err) == (0, [])
    assert out == [f"zlbench: {store}: nothing stored"]
    # without it, the default store
    assert zlbench(capsys, "list")[1] == [f"zlbench: {tmp_path / STORE_DIR}: nothing stored"]


def test_a_closed_pipe_ends_the_command_without_a_traceback(tmp_path: Path) -> None:
    """``zlbench list | head -3`` ended in a BrokenPipeError traceback. A process boundary is
    what is under test: the reader closes the pipe before the command writes."""
    reader, writer = os.pipe()
    os.close(reader)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_zlbench", "list", "--store", str(tmp_path / "s")],
        stdout=writer,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        timeout=60,
    )
    os.close(writer)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr == ""
    assert proc.returncode == 141
