"""Every error ``zlbench report|plot|merge|compare|list`` can reach is one line that starts
``ERROR: zlbench COMMAND:`` and names what was given in the command's own words: a bad screen
root once read ``--zl-compare ROOT: ...``, a refused ``-o`` ``--zl-out ...``, a caliber
refusal ``--zl-allow-caliber-mismatch overrides``. Exit status 4, as for every usage error."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_result_outputs import IDENTITY, SCREEN, rows, run_dir, synthetic_screen

from pytest_zlbench import cli
from pytest_zlbench.adapters import plot
from pytest_zlbench.core import records, rundir
from pytest_zlbench.core.store import STORE_DIR


def zlbench(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, list[str], list[str]]:
    capsys.readouterr()
    rc = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out.splitlines(), err.splitlines()


def refused(
    capsys: pytest.CaptureFixture[str], command: str, *args: object
) -> tuple[list[str], str]:
    """Run ``zlbench COMMAND ARGS``, which must fail with one error line in its own words;
    returns stdout's lines and the error without its ``ERROR: zlbench COMMAND: ``."""
    rc, out, err = zlbench(capsys, command, *args)
    assert rc == 4, (out, err)
    (line,) = err
    head = f"ERROR: zlbench {command}: "
    assert line.startswith(head), line
    assert "--zl-" not in "\n".join(out + err)  # no pytest option names
    return out, line.removeprefix(head)


def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    run_dir(a, rows("mm", SCREEN["mm"], None))
    run_dir(b, rows("mm", SCREEN["mm"], 0))
    return a, b


def hide_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """matplotlib as if not installed: importing it fails, and it has no module spec."""
    for name in ("matplotlib", "matplotlib.figure"):  # the submodule may be imported already
        monkeypatch.setitem(sys.modules, name, None)


def other_device(run: Path) -> None:
    (run / records.IDENTITY_FILE).write_text(json.dumps({**IDENTITY, "device": "another card"}))


# --------------------------------------------------------------------------------------------
# zlbench report


def test_report_of_a_screen_root_without_operators(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder marked as a screen root but holding no rounds was refused as
    ``--zl-compare ROOT: neither a run directory pair nor an A/B root``."""
    root = tmp_path / "screen"
    root.mkdir()
    (root / rundir.KIND_FILE).write_text(rundir.kind_marker(rundir.SCREEN, "2026-12-01"))
    _, error = refused(capsys, "report", root)
    assert error == f"{root}: not an A/B root (no <op>/r<k>_A directories)"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "unreadable (JSONDecodeError)"),
        ('{"switch": {"X": "1"}, "rou', "unreadable (JSONDecodeError)"),
        ("[]", "not an object"),
        ('{"switch": ["X"], "rounds": 2}', "switch is not an object of NAME: VALUE"),
        ('{"switch": {"X": "1"}, "rounds": "two"}', "rounds is not a whole number"),
    ],
)
def test_report_refuses_a_screen_json_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, why: str
) -> None:
    """A corrupt screen.json read as none: the table looked whole and the screen_result.json it
    rewrote lost the switch. ``merge`` and ``--zl-resume`` refused the same file."""
    root = synthetic_screen(tmp_path / "screen")
    (root / "screen.json").write_text(text)
    _, error = refused(capsys, "report", root)
    assert error == f"{root / 'screen.json'}: {why}"
    assert not (root / "screen_result.json").exists()


def test_report_refuses_a_caliber_mismatch_in_its_own_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = synthetic_screen(tmp_path / "screen")
    other_device(root / "mm" / "r1_B")
    rc, out, err = zlbench(capsys, "report", root)
    assert (rc, err) == (4, [])
    assert out == [
        "!!! [caliber] device differs: r1_A='NVIDIA H200' r1_B='another card' (mm)",
        "!!! [caliber] refusing to compare; --allow-caliber-mismatch overrides",
    ]
    rc, out, _ = zlbench(capsys, "report", root, "--allow-caliber-mismatch")
    assert rc == 0


def test_report_of_a_root_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = synthetic_screen(tmp_path / "screen")
    fd = os.open(root / rundir.LOCK_FILE, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another open file: refused as another session's
        _, error = refused(capsys, "report", root)
    finally:
        os.close(fd)
    assert error.startswith(f"{root}: in use by another session (")


def test_report_of_a_root_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An operator's ``ab.json`` that cannot be replaced ended in a traceback."""
    root = synthetic_screen(tmp_path / "screen")
    (root / "mm" / "ab.json").mkdir()
    _, error = refused(capsys, "report", root)
    assert error.startswith(f"{root}: not writable (")


def test_report_of_a_name_when_the_store_cannot_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken store index read as "no such stored screen"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / STORE_DIR).mkdir()
    (tmp_path / STORE_DIR / "index.json").write_text("{}")
    _, error = refused(capsys, "report", "nightly")
    assert error.startswith("nightly: no such directory, and the store cannot be read: ")
    assert error.endswith("index.json: not a zlbench store index (no entries list)")
    _, error = refused(capsys, "compare", "nightly", "other")
    assert error.startswith("A: nightly: no such directory, and the store cannot be read: ")
    _, error = refused(capsys, "list")
    assert error.endswith("index.json: not a zlbench store index (no entries list)")


# --------------------------------------------------------------------------------------------
# zlbench compare


def no_rows(tmp_path: Path, b: Path) -> tuple[object, ...]:
    (b / records.ROWS_FILE).unlink()
    return ()


def screen_as_out(tmp_path: Path, b: Path) -> tuple[object, ...]:
    return ("-o", synthetic_screen(tmp_path / "screen"))


def file_as_out(tmp_path: Path, b: Path) -> tuple[object, ...]:
    (tmp_path / "f").write_text("")
    return ("-o", tmp_path / "f")


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        (no_rows, "B: {b}/rows.jsonl: missing"),
        (
            screen_as_out,
            "-o {tmp}/screen: holds an A/B screen root, not a comparison of two runs; give a new "
            "directory (a directory holds one kind of results)",
        ),
        (file_as_out, "-o {tmp}/f: not a directory"),
    ],
    ids=["side", "out-of-another-kind", "out-a-file"],
)
def test_compare_names_its_own_arguments(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    setup: Callable[[Path, Path], tuple[object, ...]],
    expected: str,
) -> None:
    a, b = two_runs(tmp_path)
    extra = setup(tmp_path, b)
    if not extra:
        extra = ("-o", tmp_path / "cmp")
    _, error = refused(capsys, "compare", a, b, *extra)
    assert error == expected.format(b=b, tmp=tmp_path)


def test_compare_refuses_a_caliber_mismatch_in_its_own_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_runs(tmp_path)
    other_device(b)
    rc, out, err = zlbench(capsys, "compare", a, b, "-o", tmp_path / "cmp")
    assert (rc, err) == (4, [])
    assert out[-1] == "!!! [caliber] refusing to compare; --allow-caliber-mismatch overrides"
    assert "--zl-" not in "\n".join(out)


# --------------------------------------------------------------------------------------------
# zlbench plot, zlbench merge


def test_plot_of_a_root_it_cannot_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    root = synthetic_screen(tmp_path / "screen")
    (root / "mm" / "delta.svg").mkdir()
    _, error = refused(capsys, "plot", root)
    assert error.startswith(f"{root}: not writable (")


def test_plot_without_matplotlib_checks_its_arguments_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad root is named as one error (exit 4); only a good one hears that matplotlib is
    missing: one line, exit status 1 (nothing could be drawn), no error."""
    hide_matplotlib(monkeypatch)
    _, error = refused(capsys, "plot", tmp_path / "nowhere")
    assert error == f"{tmp_path / 'nowhere'}: no such directory"
    _, error = refused(capsys, "plot", tmp_path)
    assert error == f"{tmp_path}: not an A/B root (no <op>/r<k>_A directories)"
    root = synthetic_screen(tmp_path / "screen")
    rc, out, err = zlbench(capsys, "plot", root)
    assert (rc, err) == (1, [])
    assert out == [f"zlbench: {plot.MISSING} for the 2 operator(s) of {root}"]
    assert not list(root.rglob("*.svg"))


def test_plot_that_fails_on_one_operator_draws_the_others_and_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plot matplotlib cannot draw (here a ValueError from the drawing) is one line naming
    its operator and exit status 1; the other operators' plots are drawn, no traceback."""
    pytest.importorskip("matplotlib")
    root = synthetic_screen(tmp_path / "screen")
    write = plot.write

    def failing(path: Path, result: object) -> bool:
        if path.parent.name == "mm":
            raise ValueError("no room for the labels\nsecond line")
        return write(path, result)  # type: ignore[arg-type]

    (root / "mm" / plot.PLOT_FILE).write_text("<svg>a plot of an earlier result</svg>")
    monkeypatch.setattr(plot, "write", failing)
    rc, out, err = zlbench(capsys, "plot", root)
    assert rc == 1, (out, err)
    assert err == ["zlbench: mm: no plot (ValueError: no room for the labels)"]
    assert not (root / "mm" / plot.PLOT_FILE).exists()  # no plot of another result stays
    drawn = sorted(p.parent.name for p in root.glob("*/delta.svg"))
    assert drawn == ["abs"]
    assert f"zlbench: drew {root / drawn[0] / plot.PLOT_FILE}" in out


def test_plot_whose_matplotlib_cannot_write_its_own_files_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OSError raised inside matplotlib about a file of its own (its font cache) read as
    "ROOT: not writable"; it is each plot's failure, with the file it names."""
    pytest.importorskip("matplotlib")
    root = synthetic_screen(tmp_path / "screen")
    cache = tmp_path / "home" / ".cache" / "matplotlib" / "fontlist-v390.json"

    def failing(path: Path, result: object) -> bool:
        raise PermissionError(errno.EACCES, "Permission denied", str(cache))

    monkeypatch.setattr(plot, "write", failing)
    monkeypatch.setattr(plot, "write_overview", failing)
    rc, out, err = zlbench(capsys, "plot", root)
    assert rc == 1, (out, err)
    assert not any("not writable" in line for line in out + err)
    assert err == [
        f"zlbench: {name}: no plot (PermissionError: [Errno 13] Permission denied: '{cache}')"
        for name in ("abs", "mm", "overview")
    ]


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOSPC, "No space left on device"),  # write() names no file
        OSError(errno.ELOOP, "Too many levels of symbolic links", "loop"),
    ],
    ids=["disk-full", "symlink-loop"],
)
def test_plot_on_a_full_disk_or_a_symlink_loop_is_one_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    error: OSError,
) -> None:
    """A full disk is ROOT's (not each plot's) failure; a file name that loops is a plot's,
    and judging where it lies raised RuntimeError (a traceback)."""
    pytest.importorskip("matplotlib")
    root = synthetic_screen(tmp_path / "screen")
    if error.errno == errno.ELOOP:
        (tmp_path / "loop").symlink_to(tmp_path / "loop")
        monkeypatch.chdir(tmp_path)

    def failing(path: Path, result: object) -> bool:
        raise error

    monkeypatch.setattr(plot, "write", failing)
    if error.errno == errno.ENOSPC:
        _, message = refused(capsys, "plot", root)
        assert message == f"{root}: not writable (No space left on device)"
    else:
        rc, out, err = zlbench(capsys, "plot", root)
        assert rc == 1, (out, err)
        assert err[0].startswith("zlbench: abs: no plot (OSError: [Errno 40]")


def test_plot_whose_overview_fails_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    root = synthetic_screen(tmp_path / "screen")

    def failing(path: Path, doc: object) -> bool:
        raise ValueError("no room")

    monkeypatch.setattr(plot, "write_overview", failing)
    rc, out, err = zlbench(capsys, "plot", root)
    assert rc == 1, (out, err)
    assert err == ["zlbench: overview: no plot (ValueError: no room)"]
    assert f"zlbench: drew {root / 'mm' / plot.PLOT_FILE}" in out


def test_merge_names_the_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = two_runs(tmp_path)
    _, error = refused(capsys, "merge", a, "-o", tmp_path / "m")
    assert error == f"{a}: not a finished screen root (no screen.tsv)"


@pytest.mark.parametrize(
    ("command", "args", "named"),
    [
        ("compare", ("A", "B", "-o", ""), "argument -o/--out"),
        ("compare", ("", "B"), "argument A"),
        ("report", ("ROOT", "--floor-from="), "argument --floor-from"),
        ("plot", ("",), "argument ROOT"),
        ("merge", ("P", "-o", ""), "argument -o/--out"),
    ],
)
def test_an_empty_argument_is_refused_not_read_as_a_default(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    args: tuple[str, ...],
    named: str,
) -> None:
    """``-o "$OUT"`` with OUT unset wrote to ``runs/zl_<time>``; ``--floor-from=`` judged
    against the screen's own floor: an unset shell variable must not pass for no option."""
    monkeypatch.chdir(tmp_path)
    _, line = refused(capsys, command, *args)
    assert line == f"{named}: is empty"
    assert list(tmp_path.iterdir()) == []


def test_compare_of_a_run_and_a_screen_root_says_what_the_root_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It read ``[caliber] B: .../run_identity.json: missing``, as of a broken run."""
    a, _ = two_runs(tmp_path)
    root = synthetic_screen(tmp_path / "screen")
    _, error = refused(capsys, "compare", a, root, "-o", tmp_path / "cmp")
    assert error == f"B: {root}: an A/B screen root, not a run directory (zlbench report reads it)"
    assert not (tmp_path / "cmp").exists()


def test_compare_of_a_run_with_itself_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It printed a table of +0.000 % deltas, as if two runs had agreed exactly."""
    a, _ = two_runs(tmp_path)
    _, error = refused(capsys, "compare", a, tmp_path / "a" / ".." / "a", "-o", tmp_path / "c")
    assert error == f"A and B are the same run directory ({a}): compare two runs"
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("plot", ("{f}",)),
        ("report", ("{root}", "--floor-from", "{f}")),
        ("merge", ("{f}", "-o", "{tmp}/m")),
    ],
)
def test_a_file_given_for_a_folder_is_named_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, args: tuple[str, ...]
) -> None:
    """A file read ``no such directory``, which sends the user looking for a missing path."""
    f = tmp_path / "f"
    f.write_text("x\n")
    root = synthetic_screen(tmp_path / "screen")
    given = [a.format(f=f, root=root, tmp=tmp_path) for a in args]
    _, error = refused(capsys, command, *given)
    assert error.endswith(f"{f}: a file, not a directory"), error
