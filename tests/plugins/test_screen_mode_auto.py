"""``--zl-screen-mode=auto`` (the default): one process for a switch read when kernels compile,
two in lockstep for one read at import; the header and ``screen_result.json`` say which and why."""

from __future__ import annotations

import json

import pytest
from test_one_process import TESTS
from test_sides import CONFTEST, screen


@pytest.fixture
def suite(zl_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PID_LOG", str(zl_pytester.path / "pids.log"))
    zl_pytester.makeconftest(CONFTEST)
    zl_pytester.makepyfile(test_ops=TESTS)
    return zl_pytester


def chosen(root: object) -> dict[str, object]:
    doc = json.loads((root / "screen_result.json").read_text())  # type: ignore[operator]
    mode = doc["settings"]["screen_mode"]
    assert isinstance(mode, dict)
    return mode


def test_auto_screens_a_thread_count_read_at_import_one_process_per_side_in_lockstep(
    suite: pytest.Pytester,
) -> None:
    result, root, pids = screen(suite, "auto", "--zl-ab=OMP_NUM_THREADS=1", "-k", "steady")
    assert result.ret == 0, result.outlines + result.errlines
    assert sorted(side for _, side in pids) == ["-", "A", "B", "record"], pids
    result.stdout.fnmatch_lines(
        ["zlbench screen mode: lockstep (auto: OMP_NUM_THREADS is in neither *)"]
    )
    assert chosen(root)["mode"] == "lockstep"
    assert chosen(root)["chosen_by"] == "auto"
    assert "each side runs in its own process" in str(chosen(root)["reason"])


@pytest.mark.triton
def test_auto_screens_a_variable_of_tritons_cache_key_in_one_process(
    suite: pytest.Pytester,
) -> None:
    pytest.importorskip("triton")
    result, root, pids = screen(suite, "auto", "--zl-ab=DISABLE_MMA_V3=1", "-k", "steady")
    assert result.ret == 0, result.outlines + result.errlines
    assert sorted(side for _, side in pids) == ["-", "AB", "record"], pids
    result.stdout.fnmatch_lines(
        [
            "zlbench screen mode: one-process (auto: DISABLE_MMA_V3 is in Triton 3.*'s "
            "cache-invalidating set: read when kernels compile, so one process times both)"
        ]
    )
    assert chosen(root) == {
        "mode": "one-process",
        "chosen_by": "auto",
        "reason": chosen(root)["reason"],
    }
    assert json.loads((root / "screen.json").read_text())["mode"] == "one-process"


def test_a_named_mode_is_kept_and_says_so(suite: pytest.Pytester) -> None:
    result, root, _ = screen(suite, "sequential", "--zl-ab=X", "-k", "steady")
    assert result.ret == 0, result.outlines + result.errlines
    result.stdout.fnmatch_lines(["zlbench screen mode: sequential (--zl-screen-mode)"])
    assert chosen(root) == {"mode": "sequential", "chosen_by": "--zl-screen-mode", "reason": None}


def test_a_resumed_root_keeps_the_mode_it_was_screened_in(suite: pytest.Pytester) -> None:
    """auto would pick one process for a FlagTree switch; a root screened in lockstep (named,
    or by an earlier version's default) goes on in lockstep rather than being refused."""
    first, root, _ = screen(suite, "lockstep", "--zl-ab=X", "-k", "steady", root="kept")
    assert first.ret == 0, first.outlines + first.errlines
    again, _, _ = screen(suite, "auto", "--zl-ab=X", "-k", "steady", "--zl-resume", root="kept")
    assert again.ret == 0, again.outlines + again.errlines
    again.stdout.fnmatch_lines(
        ["zlbench screen mode: lockstep (auto: resumed: the mode * was screened in)"]
    )
    assert chosen(root)["mode"] == "lockstep"
