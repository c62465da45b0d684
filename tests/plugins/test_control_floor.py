"""A switch screen judged against a separate A/A control's noise floor: ``zlbench report ROOT
--floor-from AA_ROOT``, ``--zl-compare=ROOT --zl-floor-from=AA_ROOT`` and ``--zl-floor-from`` at
the end of a screen. The floor's source says it came from that control (``separate A/A
control`` and the control's root); a root that is no A/A control, or of another caliber, is
refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from test_cli_errors import hide_matplotlib, refused, zlbench
from test_result_outputs import (
    CONFTEST,
    IDENTITY,
    OPS_SUITE,
    run_dir,
    synthetic_screen,
    validator,
)

from pytest_zlbench.core import records, rundir
from pytest_zlbench.core.records import Row
from zl_testing import NO_HYPOTHESIS, assert_usage_error

SEPARATE = "separate A/A control"
#: an A/A control's per-round deltas: ten 200 µs shapes in two rounds, up to ±15 %: its floor
#: (p95 of the 20 |deltas|) is about 15 %, wider than mm's steady +12 % at [4096]
CONTROL_DELTAS = [((i + 1) * 0.015, -(i + 1) * 0.015 + 0.001) for i in range(10)]


def control_screen(root: Path, device: str = "NVIDIA H200") -> Path:
    """An A/A control screen root: both sides of every round ran the screen's one (empty)
    switch, as their identities say."""
    op_dir = root / "ctl"
    for k in (1, 2):
        for side in "AB":
            deltas = [d[k - 1] if side == "B" else 0.0 for d in CONTROL_DELTAS]
            rows = [
                Row("ctl", "float16", f"[{i}]", 0.2 * (1 + d), 0.3, timer="graph")
                for i, d in enumerate(deltas)
            ]
            run = op_dir / f"r{k}_{side}"
            run_dir(run, rows)
            identity = {**IDENTITY, "device": device, "side": side, "switch": {}, "round": k}
            (run / records.IDENTITY_FILE).write_text(json.dumps(identity))
    (op_dir / "op.complete").write_text("")
    (root / rundir.KIND_FILE).write_text(rundir.kind_marker(rundir.SCREEN, "2026-12-01"))
    return root


def mm_4096(root: Path) -> dict[str, object]:
    (entry,) = [e for e in json.loads((root / "screen_result.json").read_text())["operators"]
                if e["op"] == "mm"]  # fmt: skip
    (shape,) = [s for s in entry["shapes"] if s["shape"] == "[4096]"]
    return shape  # type: ignore[no-any-return]


def test_report_judges_a_screen_against_a_separate_control(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = synthetic_screen(tmp_path / "screen")
    aa = control_screen(tmp_path / "aa")
    rc, _, _ = zlbench(capsys, "report", root)
    assert rc == 0
    doc = json.loads((root / "screen_result.json").read_text())
    assert doc["noise_floor"]["source"] != SEPARATE
    assert mm_4096(root)["beyond_noise"] is True  # +12 % twice, no floor: its own spread

    rc, out, err = zlbench(capsys, "report", root, "--floor-from", aa)
    assert (rc, err) == (0, [])
    doc = json.loads((root / "screen_result.json").read_text())
    validator().validate(doc)
    floor = doc["noise_floor"]
    assert (floor["source"], floor["root"], floor["ops"]) == (SEPARATE, str(aa.resolve()), ["ctl"])
    assert floor["text"].startswith(f"{SEPARATE} {aa.resolve()} (ctl): ")
    assert {e["floor"]["root"] for e in doc["operators"]} == {str(aa.resolve())}
    shape = mm_4096(root)
    assert shape["beyond_noise"] is False
    assert shape["noise_pct"] > 12  # the control's rounds scatter wider than mm's +12 %
    assert any(str(aa.resolve()) in line for line in out)  # the table's floor line
    # screen.tsv: the source in its own column, the control's root in the floor's text
    tsv = pd.read_csv(root / "screen.tsv", sep="\t")
    assert set(tsv["floor_source"]) == {SEPARATE}
    assert all(str(aa.resolve()) in text for text in tsv["floor"])
    # ab.json of each operator too
    ab = json.loads((root / "mm" / "ab.json").read_text())
    validator("#/$defs/operator").validate(ab)
    assert ab["floor"]["root"] == str(aa.resolve())
    # judged again without --floor-from, it keeps that control and says so (it fell back to
    # its own floor without a word)
    rc, out, _ = zlbench(capsys, "report", root)
    assert rc == 0
    assert any("judged against the separate A/A control it was judged against" in t for t in out)
    doc = json.loads((root / "screen_result.json").read_text())
    assert doc["noise_floor"]["source"] == SEPARATE


def test_plot_takes_the_same_floor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = synthetic_screen(tmp_path / "screen")
    aa = control_screen(tmp_path / "aa", device="another card")
    _, error = refused(capsys, "plot", root, "--floor-from", aa)
    assert error.startswith(f"--floor-from {aa}: its caliber differs from ")


def test_plot_keeps_the_control_a_root_was_judged_against(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``zlbench plot ROOT`` without ``--floor-from`` draws each operator as ``report`` judged
    it, against the separate A/A control the root was judged against (it judged the root
    against its own floor: the pictures contradicted the report)."""
    pytest.importorskip("matplotlib")
    from pytest_zlbench.adapters import plot

    root = synthetic_screen(tmp_path / "screen")
    aa = control_screen(tmp_path / "aa")
    assert zlbench(capsys, "report", root, "--floor-from", aa)[0] == 0
    judged = json.loads((root / "mm" / "ab.json").read_text())
    (root / "mm" / plot.PLOT_FILE).unlink(missing_ok=True)
    rc, out, _ = zlbench(capsys, "plot", root)
    assert rc == 0
    assert any("judged against the separate A/A control it was judged against" in t for t in out)
    assert plot.shows(root / "mm" / plot.PLOT_FILE, judged)


def switch_screen(path: Path) -> Path:
    """A screen root of a switch: refused as a control."""
    return synthetic_screen(path)


def a_run(path: Path) -> Path:
    run_dir(path, [Row("mm", "float16", "[1]", 0.2, 0.3, timer="graph")])
    return path


#: roots given as --floor-from that are no A/A control of the screen, and the error of each
NOT_A_CONTROL = pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: p, "{aa}: no such directory"),
        (a_run, "{aa}: not an A/B screen root (an A/A control screen's root)"),
        (
            switch_screen,
            "{aa}: not an A/A control (side B ran a switch, or the sides were not one screen's: "
            "abs, mm)",
        ),
        (
            lambda p: control_screen(p, device="another card"),
            "{aa}: its caliber differs from {root}'s (device: 'NVIDIA H200' vs 'another card'); "
            "--allow-caliber-mismatch judges against it anyway",
        ),
    ],
    ids=["missing", "a-run", "a-switch-screen", "another-caliber"],
)


@NOT_A_CONTROL
def test_report_refuses_a_root_that_is_no_control_of_the_screen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, expected: str
) -> None:
    root = synthetic_screen(tmp_path / "screen")
    aa = tmp_path / "aa"
    make(aa)  # type: ignore[operator]
    before = (root / "screen_result.json").exists()
    _, error = refused(capsys, "report", root, "--floor-from", aa)
    assert error == "--floor-from " + expected.format(aa=aa, root=root)
    assert (root / "screen_result.json").exists() == before  # nothing written


@NOT_A_CONTROL
def test_plot_without_matplotlib_names_a_bad_floor_first(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    make: object,
    expected: str,
) -> None:
    """Without matplotlib, ``zlbench plot --floor-from`` said only that matplotlib is missing
    (exit 1), whatever the root given: the user learnt of the bad argument after installing it."""
    hide_matplotlib(monkeypatch)
    root = synthetic_screen(tmp_path / "screen")
    aa = tmp_path / "aa"
    make(aa)  # type: ignore[operator]
    out, error = refused(capsys, "plot", root, "--floor-from", aa)
    assert error == "--floor-from " + expected.format(aa=aa, root=root)
    assert not any("matplotlib" in line for line in out)
    assert not list(root.rglob("*.svg"))


def test_another_caliber_is_judged_against_when_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = synthetic_screen(tmp_path / "screen")
    aa = control_screen(tmp_path / "aa", device="another card")
    rc, out, _ = zlbench(capsys, "report", root, "--floor-from", aa, "--allow-caliber-mismatch")
    assert rc == 0
    assert f"!!! [caliber] device differs: {root}='NVIDIA H200' {aa}='another card'" in out
    assert mm_4096(root)["beyond_noise"] is False


def test_a_stored_screen_has_no_rounds_to_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    aa = control_screen(tmp_path / "aa")
    _, error = refused(capsys, "report", "nightly", "--floor-from", aa)
    assert error.startswith("nightly: no such directory (--floor-from judges an A/B root's")


# --------------------------------------------------------------------------------------------
# pytest: --zl-compare of one root, and a screen


@pytest.mark.parametrize("how", ["option", "ini"])
def test_pytest_zl_compare_of_a_root_takes_the_floor_from_a_control(
    zl_pytester: pytest.Pytester, how: str
) -> None:
    root = synthetic_screen(zl_pytester.path / "screen")
    aa = control_screen(zl_pytester.path / "aa")
    given = (f"--zl-floor-from={aa}",) if how == "option" else ("-o", f"zl_floor_from={aa}")
    result = zl_pytester.runpytest(f"--zl-compare={root}", *given, "-p", "no:cacheprovider")
    assert result.ret == 0, result.outlines
    floor = json.loads((root / "screen_result.json").read_text())["noise_floor"]
    assert (floor["source"], floor["root"]) == (SEPARATE, str(aa.resolve()))


def test_a_floor_root_from_the_ini_file_is_named_by_its_ini_key(
    zl_pytester: pytest.Pytester,
) -> None:
    # the refusal named --zl-floor-from, an option the command line did not have
    root = synthetic_screen(zl_pytester.path / "screen")
    missing = zl_pytester.path / "missing"
    ini = ("-o", f"zl_floor_from={missing}")
    result = zl_pytester.runpytest(f"--zl-compare={root}", *ini, "-p", "no:cacheprovider")
    assert_usage_error(result, f"zl_floor_from (ini) {missing}: no such directory")
    zl_pytester.makepyfile(test_ops=OPS_SUITE)
    result = refused_screen(zl_pytester, "--zl-ab=OMP_NUM_THREADS=1", f"--zl-out={root}2", *ini)
    assert_usage_error(result, f"zl_floor_from (ini) {missing}: no such directory")


def test_pytest_zl_compare_of_two_runs_refuses_a_floor(zl_pytester: pytest.Pytester) -> None:
    a = a_run(zl_pytester.path / "a")
    b = a_run(zl_pytester.path / "b")
    aa = control_screen(zl_pytester.path / "aa")
    result = zl_pytester.runpytest(
        f"--zl-compare={a}", f"--zl-compare={b}", f"--zl-floor-from={aa}", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --zl-floor-from judges the rounds of one A/B root; *"])


SCREEN = ("--zl-backend=cpu", "-p", "no:cacheprovider", *NO_HYPOTHESIS, "--zl-rounds=2")


def screen(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*SCREEN, *args)


def refused_screen(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A screen refused before it starts anything: in process (no process boundary)."""
    return pytester.runpytest(*SCREEN, *args)


def test_a_screen_takes_its_floor_from_an_a_a_control_screen(
    zl_pytester: pytest.Pytester,
) -> None:
    zl_pytester.makeconftest(CONFTEST)
    zl_pytester.makepyfile(test_ops=OPS_SUITE)
    aa, root = zl_pytester.path / "aa", zl_pytester.path / "screen"
    # refused before anything is measured: a root that is no A/A control
    bad = refused_screen(zl_pytester, "--zl-ab=OMP_NUM_THREADS=1", f"--zl-out={root}",
                         f"--zl-floor-from={zl_pytester.path}")  # fmt: skip
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines([f"ERROR: --zl-floor-from {zl_pytester.path}: not an A/B screen*"])
    assert not root.exists()

    # no switch: an A/A control, screened as the A/B screen that it judges (auto would screen
    # it in one process, the A/B screen in two: OMP_NUM_THREADS is read at import)
    control = screen(zl_pytester, f"--zl-out={aa}", "--zl-screen-mode=lockstep")
    assert control.ret == 0, control.outlines
    result = screen(zl_pytester, "--zl-ab=OMP_NUM_THREADS=1", f"--zl-out={root}",
                    f"--zl-floor-from={aa}")  # fmt: skip
    assert result.ret == 0, result.outlines
    doc = json.loads((root / "screen_result.json").read_text())
    validator().validate(doc)
    floor = doc["noise_floor"]
    assert (floor["source"], floor["root"]) == (SEPARATE, str(aa.resolve()))
    assert sorted(floor["ops"]) == ["abs", "gemm"]
    # the terminal's floor line names the control (wrapped at spaces: the path on its own)
    result.stdout.fnmatch_lines([f"noise floor: {SEPARATE}*", f"*{aa.resolve()} (abs, gemm)*"])

    # a control of another caliber is found out once the screen has measured: the screen keeps
    # its results, judged against its own floor, and exits 4 as for any caliber refusal; such
    # a screen is no baseline to store
    for identity in aa.glob("*/r*_*/run_identity.json"):
        identity.write_text(json.dumps({**json.loads(identity.read_text()), "device": "other"}))
    other = zl_pytester.path / "other"
    result = screen(zl_pytester, "--zl-ab=OMP_NUM_THREADS=1", f"--zl-out={other}",
                    f"--zl-floor-from={aa}", "--zl-save=mine")  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines
    assert "zlbench: stored as mine" not in result.stdout.str()
    result.stdout.fnmatch_lines([f"zlbench: --zl-save mine: {other.resolve()}: *; not stored"])
    result.stdout.fnmatch_lines(
        [f"!!! [[]caliber] --zl-floor-from {aa.resolve()}: its caliber differs from *"
         "(device: * vs 'other'); --zl-allow-caliber-mismatch judges against it anyway; "
         "judged against the screen's own floor"]
    )  # fmt: skip
    floor = json.loads((other / "screen_result.json").read_text())["noise_floor"]
    assert floor is None or floor["source"] != SEPARATE


@pytest.mark.parametrize("one_process", ["control", "screen"])
def test_a_control_of_the_other_kind_of_mode_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], one_process: str
) -> None:
    """A control screened in one process has a floor of its own: it judges only a screen
    measured in one process, and only such a control judges one."""
    root = synthetic_screen(tmp_path / "screen")
    aa = control_screen(tmp_path / "aa")
    marked = aa if one_process == "control" else root
    settings = marked / "screen.json"
    data = json.loads(settings.read_text()) if settings.exists() else {}
    settings.write_text(json.dumps({**data, "mode": "one-process"}))
    _, error = refused(capsys, "report", root, "--floor-from", aa)
    theirs = "in one process" if one_process == "control" else "in two processes"
    assert error.startswith(f"--floor-from {aa}: an A/A control screened {theirs}"), error
