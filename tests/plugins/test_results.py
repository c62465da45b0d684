"""Results people can gate on, read and look at: the ``zlbench`` command, the baseline store
(``--zl-save``, ``--zl-compare-to``), and a screen split over hosts (``--zl-shard``) joined by
``zlbench merge``. Runs are recorded on the cpu backend."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_zlbench import cli
from pytest_zlbench.core import screening
from pytest_zlbench.core.records import read_identity
from zl_testing import (
    ABS_TEST,
    BUSY,
    FAST_CPU_TIMER_CONFTEST,
    NO_HYPOTHESIS,
    WRITE_TTGIR,
    assert_usage_error,
)

OPS_CONFTEST = (
    FAST_CPU_TIMER_CONFTEST
    + """

def pytest_configure(config):
    for name in ("abs", "gemm", "mul", "relu"):
        config.addinivalue_line("markers", f"{name}: operator {name}")
"""
)

#: four operators: abs (2 rows), mul and relu (1 row each), and gemm, whose stand-in TTGIR
#: changes with the switch
OPS = (
    """
import os

import pytest

"""
    + BUSY
    + """

"""
    + WRITE_TTGIR
    + ABS_TEST
    + """


@pytest.mark.mul
def test_mul(zl_bench):
    zl_bench(lambda: busy(120), op="mul", dtype="int", shape="[120]")


@pytest.mark.relu
def test_relu(zl_bench):
    zl_bench(lambda: busy(50), op="relu", dtype="int", shape="[50]")


@pytest.mark.gemm
def test_gemm(zl_bench):
    switched = os.environ.get("OMP_NUM_THREADS") == "1"
    body = "ttg.convert_layout\\n" if switched else "tt.dot\\n"
    write_ttgir("gemm_kernel", "tt.func @gemm_kernel() {\\n" + body + "}\\n")
    zl_bench(lambda: busy(300), op="gemm", dtype="float16", shape="[64, 64]")
"""
)
SWITCH = "--zl-ab=OMP_NUM_THREADS=1"
BASE = ("--zl-backend=cpu", "-p", "no:cacheprovider", *NO_HYPOTHESIS)


def zlbench(
    capsys: pytest.CaptureFixture[str], *args: str | Path
) -> tuple[int, list[str], list[str]]:
    """``zlbench ARGS`` in this process: exit status, stdout lines, stderr lines."""
    capsys.readouterr()  # what came before is not this command's
    rc = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out.splitlines(), err.splitlines()


def result_files(root: Path) -> dict[str, bytes]:
    """The result files under ``root``: not the pictures and the report that shows them, which
    depend on whether matplotlib imports into the process (see :func:`no_picture_lines`)."""
    pictures = ("report.html", "overview.svg", "overview.png", "delta.svg")
    return {k: v for k, v in files_of(root).items() if not k.endswith(pictures)}


def no_picture_lines(err: list[str]) -> list[str]:
    """stderr without the one line that says no picture was drawn (matplotlib cannot be
    imported twice into one process, and in-process pytester runs drop what they imported)."""
    return [line for line in err if "no picture" not in line]


def one_error(err: list[str], *needles: str) -> str:
    (line,) = err
    assert line.startswith("ERROR: ")
    for needle in needles:
        assert needle in line, line
    return line


def record(pytester: pytest.Pytester, out: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--zl-backend=cpu", f"--zl-out={out}", "-p", "no:cacheprovider", *args
    )


@pytest.fixture
def runs(bench_suite: pytest.Pytester) -> tuple[Path, Path]:
    a, b = bench_suite.path / "runs" / "a", bench_suite.path / "runs" / "b"
    for path in (a, b):
        record(bench_suite, path).assert_outcomes(passed=3)
    return a, b


def files_of(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but the kind marker (``.zl_kind``: it holds its creation time)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".zl_kind"
    }


# --------------------------------------------------------------------------------------------
# zlbench compare / report


def test_zlbench_compare_writes_what_pytest_zl_compare_writes(
    bench_suite: pytest.Pytester, runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = runs
    by_pytest = bench_suite.path / "by_pytest"
    result = bench_suite.runpytest(
        "--noconftest", f"--zl-compare={a}", f"--zl-compare={b}", f"--zl-out={by_pytest}"
    )
    assert result.ret == 0
    by_cli = bench_suite.path / "by_cli"
    rc, out, err = zlbench(capsys, "compare", a, b, "-o", by_cli)
    assert (rc, no_picture_lines(err)) == (0, [])
    # the same result files, byte for byte (they hold no timestamp); the pictures depend on
    # whether matplotlib imports into this process
    assert result_files(by_cli) == result_files(by_pytest)
    assert sorted(result_files(by_cli)) == ["compare.json", "screen.tsv", "screen_result.json"]
    assert (by_cli / "report.html").is_file()
    assert out[0].startswith("=")
    assert "zlbench screen" in out[0]
    assert any(line.startswith("busy ") and "NO_TRITON" in line for line in out)
    assert f"zlbench: wrote {by_cli}/screen.tsv" in out
    assert out[-1] == f"zlbench: wrote {by_cli}/report.html"


def test_zlbench_compare_refuses_a_caliber_mismatch_as_pytest_does(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a, b = runs
    identity = json.loads((b / "run_identity.json").read_text())
    identity["device"] = "another card"
    (b / "run_identity.json").write_text(json.dumps(identity))
    rc, out, _ = zlbench(capsys, "compare", a, b, "-o", tmp_path / "cmp")
    assert rc == 4
    assert any(line.startswith("!!! [caliber] device differs") for line in out)
    assert not (tmp_path / "cmp").exists()
    rc, out, _ = zlbench(
        capsys, "compare", a, b, "-o", tmp_path / "cmp", "--allow-caliber-mismatch"
    )
    assert rc == 0
    line = screening.read_screen((tmp_path / "cmp" / "screen.tsv").read_text())[0]
    assert "caliber mismatch allowed: device" in line.note


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        ((), ["the following arguments are required: COMMAND"]),
        (("frobnicate",), ["invalid choice: 'frobnicate'"]),
        (("compare", "x"), ["compare", "required: B"]),
        (("compare", "nope", "x"), ["zlbench compare: A: nope: no such directory, nor a stored"]),
        (("report",), ["required: ROOT"]),
        (("report", "nowhere"), ["zlbench report: nowhere: no such directory, nor a stored"]),
        (("plot", "nowhere"), ["zlbench plot: nowhere: no such directory"]),
        (("merge",), ["required: ROOT"]),
        (("merge", "nowhere", "-o", "out"), ["zlbench merge: nowhere: no such directory"]),
        (("list", "--bogus"), ["unrecognized arguments: --bogus"]),
    ],
)
def test_every_bad_input_is_one_line_and_exit_4(
    args: tuple[str, ...],
    needles: list[str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    rc, out, err = zlbench(capsys, *args)
    assert rc == 4, (out, err)
    one_error(err, *needles)


def test_report_and_plot_refuse_a_folder_that_is_no_screen(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, _ = runs
    rc, _, err = zlbench(capsys, "report", a)
    assert rc == 4
    one_error(err, "not an A/B root")
    rc, _, err = zlbench(capsys, "plot", a)
    assert rc == 4
    one_error(err, "not an A/B root")


def test_help_of_the_command_and_of_each_subcommand(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``python -m pytest_zlbench.cli`` once as a process (the module runs as a command), then
    each subcommand's help and a usage error in this process."""
    top = subprocess.run(
        [sys.executable, "-m", "pytest_zlbench.cli", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert top.returncode == 0

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            rc = cli.main(list(args))
        except SystemExit as stop:  # argparse's --help
            rc = stop.code if isinstance(stop.code, int) else 1
        out, err = capsys.readouterr()
        return rc, out, err

    for command in ("compare", "report", "plot", "merge", "list"):
        assert command in top.stdout
        rc, out, err = run(command, "--help")
        assert rc == 0, err
        assert f"usage: zlbench {command}" in out
    rc, _, err = run("compare")
    assert rc == 4
    assert err.startswith("ERROR: zlbench compare: ")
    assert len(err.splitlines()) == 1


def test_the_console_script_is_declared() -> None:
    import tomllib

    data = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert data["project"]["scripts"] == {"zlbench": "pytest_zlbench.cli:main"}


# --------------------------------------------------------------------------------------------
# the baseline store


def test_save_a_run_and_compare_a_later_one_to_it(
    bench_suite: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    store = bench_suite.path / ".zlbench"  # the default: .zlbench in the rootdir
    base = bench_suite.path / "runs" / "base"
    result = record(bench_suite, base, "--zl-save=base")
    result.assert_outcomes(passed=3)
    ((entry),) = json.loads((store / "index.json").read_text())["entries"]
    assert (entry["name"], entry["kind"]) == ("base", "run")
    assert entry["caliber"] == read_identity(base).caliber()
    stored = store / entry["path"]
    assert stored.parent.name == entry["key"]
    # the result files only: never the caches or the log
    assert sorted(p.name for p in stored.iterdir()) == [
        ".complete",
        "ir.json",
        "rows.jsonl",
        "run_identity.json",
        "summary.tsv",
    ]
    result.stdout.fnmatch_lines([f"zlbench: stored as base in {stored}"])

    later = bench_suite.path / "runs" / "later"
    result = record(bench_suite, later, "--zl-compare-to=base")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*zlbench run summary*",
            f"zlbench: run complete: {later}",
            "*zlbench screen*",
            "busy*NO_TRITON*2*",
            f"zlbench: wrote {later}/vs_base/screen.tsv",
        ]
    )
    pairing = json.loads((later / "vs_base" / "compare.json").read_text())
    assert pairing["a"]["path"] == str(stored)

    # zlbench compare takes a stored name for either side, and lists the store
    rc, out, _ = zlbench(
        capsys, "--store", store, "compare", "base", later, "-o", bench_suite.path / "c"
    )
    assert rc == 0
    assert result_files(bench_suite.path / "c") == result_files(later / "vs_base")
    rc, out, _ = zlbench(capsys, "--store", store, "list")
    assert rc == 0
    assert out[0].split()[:3] == ["name", "kind", "saved"]
    assert out[2].split()[:2] == ["base", "run"]
    assert out[-1] == f"zlbench: store {store}"

    # --zl-compare with a stored name as side A
    result = bench_suite.runpytest(
        "--zl-compare-to=base", f"--zl-compare={later}", f"--zl-out={bench_suite.path / 'd'}"
    )
    assert result.ret == 0
    assert result_files(bench_suite.path / "d") == result_files(later / "vs_base")


def test_compare_to_a_stored_run_of_another_caliber_is_refused(
    bench_suite: pytest.Pytester,
) -> None:
    record(bench_suite, bench_suite.path / "base", "--zl-save=base").assert_outcomes(passed=3)
    stored = next((bench_suite.path / ".zlbench").glob("*/base"))
    identity = json.loads((stored / "run_identity.json").read_text())
    identity["timer"] = "graph"
    (stored / "run_identity.json").write_text(json.dumps(identity))
    later = bench_suite.path / "later"
    result = record(bench_suite, later, "--zl-compare-to=base")
    assert result.ret == 4
    result.stdout.fnmatch_lines(
        ["!!! [[]caliber] timer differs: *", "!!! [[]caliber] refusing to compare; *"]
    )
    assert (later / ".complete").is_file()  # the run itself is complete
    assert not (later / "vs_base" / "screen.tsv").exists()


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--zl-save=x",), ["--zl-save needs a run to work on: give --zl-out=DIR"]),
        (("--zl-compare-to=x",), ["--zl-compare-to needs a run to work on"]),
        (("--zl-out=r", "--zl-save=a/b"), ["'a/b' cannot name a stored run"]),
        (("--zl-out=r", "--zl-compare-to=none"), ["no stored run or screen named 'none'"]),
        (("--zl-out=r", "--zl-save=base"), ["'base' is already stored"]),
        # refused before the run, not after it: the store cannot be written
        (
            ("--zl-out=r", "--zl-save=x", "--zl-store=a_file/store"),
            ["--zl-save: ", "store: cannot be created or written (", "a_file: not a directory)"],
        ),
        ((SWITCH, "--zl-out=s", "--zl-compare-to=base"), ["--zl-compare-to pairs run"]),
        (("--zl-shard=1/2",), ["--zl-shard has no effect", "splits the operators of an A/B"]),
        (("--zl-compare=a", "--zl-save=x"), ["--zl-save stores a recorded run or a screen"]),
        ((SWITCH, "--zl-out=s", "--zl-shard=3/2"), ["--zl-shard '3/2': K must be"]),
        ((SWITCH, "--zl-out=s", "--zl-shard-from=s"), ["give --zl-shard=K/N"]),
        (
            (SWITCH, "--zl-out=s", "--zl-shard=1/2", "--zl-shard-from=nowhere"),
            ["--zl-shard-from nowhere: no such screen root"],
        ),
    ],
)
def test_store_and_shard_options_refuse_bad_input_in_one_line(
    bench_suite: pytest.Pytester, args: tuple[str, ...], needles: list[str]
) -> None:
    if "--zl-save=base" in args:
        record(bench_suite, bench_suite.path / "base", "--zl-save=base").assert_outcomes(passed=3)
    (bench_suite.path / "a_file").write_text("")
    # --zl-compare reads the backend from the runs: --zl-backend there is refused on its own
    backend = () if any(a.startswith("--zl-compare=") for a in args) else ("--zl-backend=cpu",)
    result = bench_suite.runpytest(*backend, "-p", "no:cacheprovider", *args)
    assert_usage_error(result, *needles)
    assert not (bench_suite.path / "r").exists()  # refused before anything ran


# --------------------------------------------------------------------------------------------
# a screen in parts


def test_a_screen_split_in_two_and_merged_equals_the_unsplit_screen(
    zl_pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    zl_pytester.makeconftest(OPS_CONFTEST)
    zl_pytester.makepyfile(test_ops=OPS)
    path = zl_pytester.path

    def run_screen(root: str, *args: str) -> pytest.RunResult:
        return zl_pytester.runpytest_subprocess(*BASE, SWITCH, f"--zl-out={path / root}", *args)

    whole = run_screen("whole")
    whole.assert_outcomes(passed=4)
    part1 = run_screen("part1", "--zl-shard=1/2", "--zl-save=part1")
    part2 = run_screen("part2", "--zl-shard=2/2")
    # by count, names sorted: abs and mul in part 1, gemm and relu in part 2 (abs: two tests)
    part1.assert_outcomes(passed=2, deselected=2)
    part2.assert_outcomes(passed=2, deselected=3)

    def lines(root: Path) -> dict[str, screening.ScreenLine]:
        text = (root / "screen.tsv").read_text()
        return {line.op: line for line in screening.read_screen(text)}

    ops1, ops2 = set(lines(path / "part1")), set(lines(path / "part2"))
    assert not ops1 & ops2
    assert ops1 | ops2 == {"abs", "gemm", "mul", "relu"}
    assert json.loads((path / "part1" / "screen.json").read_text())["shard"] == "1/2"

    # a screen part is stored with its result (screen_result.json, screen.tsv), screen.json and
    # each operator's ab.json
    stored = next((path / ".zlbench").glob("*/part1"))
    assert sorted(str(p.relative_to(stored)) for p in stored.rglob("*") if p.is_file()) == sorted(
        ["screen_result.json", "screen.tsv", "screen.json", *(f"{op}/ab.json" for op in ops1)]
    )

    rc, out, err = zlbench(capsys, "merge", path / "part1", path / "part2", "-o", path / "merged")
    assert (rc, no_picture_lines(err)) == (0, [])
    assert f"zlbench: wrote {path / 'merged'}/screen.tsv" in out
    merged, unsplit = lines(path / "merged"), lines(path / "whole")
    assert sorted(merged) == sorted(unsplit)
    for op, line in unsplit.items():
        assert (merged[op].verdict, merged[op].rows) == (line.verdict, line.rows), op
        assert (merged[op].kernels_a, merged[op].kernels_b) == (line.kernels_a, line.kernels_b)
    assert unsplit["gemm"].verdict == screening.IR_CHANGED
    # one screen, one floor and one false discovery rate: each part had judged its own
    doc = json.loads((path / "merged" / "screen_result.json").read_text())
    floors = {json.dumps(e["floor"], sort_keys=True) for e in doc["operators"] if e.get("floor")}
    assert len(floors) == 1

    # the merged root re-aggregates to the same screen, and its operators' cost records balance
    # later splits (the same assignment on every host that reads it)
    before = (path / "merged" / "screen.tsv").read_text()
    rc, _, _ = zlbench(capsys, "report", path / "merged")
    assert rc == 0
    assert (path / "merged" / "screen.tsv").read_text() == before
    from pytest_zlbench.core.records import read_json_object
    from pytest_zlbench.core.shard import COST_FILE, cost_of

    costs = {p.parent.name: cost_of(read_json_object(p), p.parent.name)
             for p in (path / "merged").glob(f"*/{COST_FILE}")}  # fmt: skip
    assert set(costs) == {"abs", "gemm", "mul", "relu"}
    assert all(c is not None and c > 0 for c in costs.values())

    # what merge refuses, each in one line naming the part
    rc, _, err = zlbench(capsys, "merge", path / "part1", path / "part1", "-o", path / "m2")
    one_error(err, f"zlbench merge: {path / 'part1'}: shard 1/2 again")
    rc, _, err = zlbench(capsys, "merge", path / "whole", path / "part2", "-o", path / "m3")
    assert rc == 4
    one_error(err, f"zlbench merge: {path / 'part2'}: screened ", "which", "screened too")
    settings = json.loads((path / "part2" / "screen.json").read_text())
    (path / "part2" / "screen.json").write_text(json.dumps(settings | {"rounds": 2}))
    rc, _, err = zlbench(capsys, "merge", path / "part1", path / "part2", "-o", path / "m4")
    one_error(
        err, f"zlbench merge: {path / 'part2'}: screened with other settings", "rounds: 1 vs 2"
    )
    (path / "part2" / "screen.json").write_text(json.dumps(settings))
    text = (path / "part2" / "screen.tsv").read_text()
    (path / "part2" / "screen.tsv").write_text(text.replace("\tdirect\t", "\tgraph\t"))
    rc, _, err = zlbench(capsys, "merge", path / "part1", path / "part2", "-o", path / "m5")
    one_error(err, f"zlbench merge: {path / 'part2'}: caliber differs (timer: 'direct' vs 'graph')")
    rc, _, err = zlbench(capsys, "merge", path / "part1", "-o", path / "merged")
    one_error(err, "not empty; give a new directory")
    assert not any((path / name).exists() for name in ("m2", "m3", "m4", "m5"))


@pytest.mark.usefixtures("pictures")
def test_plot_without_matplotlib_says_what_was_not_drawn(
    zl_pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    zl_pytester.makeconftest(OPS_CONFTEST)
    zl_pytester.makepyfile(test_ops=OPS)
    root = zl_pytester.path / "s"
    zl_pytester.runpytest_subprocess(*BASE, SWITCH, f"--zl-out={root}", "-k", "gemm or mul")
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("needs matplotlib")
    (root / "gemm" / "delta.svg").unlink()
    # in its own process: numpy cannot be imported twice into one, and in-process pytester
    # runs drop the modules they imported
    drawn = subprocess.run(
        [sys.executable, "-m", "pytest_zlbench.cli", "plot", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert drawn.returncode == 0, drawn.stderr
    assert drawn.stdout.splitlines() == [
        f"zlbench: drew {root / 'gemm' / 'delta.svg'}",
        # a NO_TRITON operator has its numbers; its plot, drawn by the screen, is kept
        f"zlbench: {root / 'mul' / 'delta.svg'}: up to date",
        f"zlbench: drew {root / 'overview.svg'} and {root / 'overview.png'}",
    ]
    assert (root / "gemm" / "delta.svg").is_file()
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "matplotlib" else real(n, *a)
    )
    rc, out, _err = zlbench(capsys, "plot", root)
    assert rc == 1
    assert out == [
        "zlbench: matplotlib is not installed (pip install pytest-zlbench[plot]): no picture "
        f"drawn for the 2 operator(s) of {root}"
    ]


# --------------------------------------------------------------------------------------------
# identity fields


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_run_records_its_checkout_and_the_cards_state(bench_suite: pytest.Pytester) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (("init", "-q"), ("add", "."), ("commit", "-qm", "suite")):
        subprocess.run(["git", *args], cwd=bench_suite.path, check=True, env={**os.environ, **env})
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=bench_suite.path, capture_output=True, text=True
    ).stdout.strip()
    out = bench_suite.path / "runs" / "a"  # untracked once written: the tree is dirty at the end
    record(bench_suite, out).assert_outcomes(passed=3)
    info = read_identity(out).info
    assert info["checkout"]["flaggems"] == {
        "path": str(bench_suite.path.resolve()),
        "commit": head,
        "dirty": True,
    }
    assert info["checkout"]["triton"] is None  # a wheel, not a work tree
    for when in ("start", "end"):
        assert info["device_state"][when] == {
            "tool": None,
            "reason": "cpu backend: not read (no card)",
        }
    assert info["versions"]["pytest"] == pytest.__version__
    assert info["versions"]["pytest-zlbench"]


def test_report_refuses_a_folder_that_is_no_screen_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``zlbench report`` re-aggregated any folder holding ``<op>/r1_A`` and wrote its
    screen.tsv there."""
    (tmp_path / "abs" / "r1_A").mkdir(parents=True)
    rc, _, err = zlbench(capsys, "report", tmp_path)
    assert rc == 4
    one_error(err, f"zlbench report: {tmp_path}: not an A/B root")
    assert not (tmp_path / "screen.tsv").exists()
