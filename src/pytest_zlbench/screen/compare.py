"""``--zl-compare``: two existing run directories paired (``compare.json``, ``screen.tsv``), or
an A/B root re-aggregated in place. Reads run directories only and runs no tests."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from .. import _common
from ..contract import COMPARE_FILE, ROUND_GLOB, SETTINGS_FILE
from ..core import records, result, screening
from ..core.caliber import PREFIX as CALIBER_PREFIX
from ..core.caliber import check as caliber_check
from ..core.caliber import refusing, unreadable
from ..core.gate import REGRESSION_EXIT
from ..core.judge import Judging
from ..core.noise import CONTROL_ROOT
from ..core.records import RecordError
from ..core.rundir import SCREEN, IdentityError, Side, load_side, marked_kind, not_a_dir
from . import result_file
from .liveness import observe
from .outputs import allow_unjudged, exit_status, fail_beyond, publish
from .result_file import cut_ops, left_out
from .results import KeptResult, caliber_line, is_done, read_op_dir, write_op_result
from .settings import default_root


@dataclass(frozen=True)
class Words:
    """How a comparison's messages name what the user gave: pytest's options (the defaults), or
    a ``zlbench`` command's own arguments (:func:`command_words`). A message reads
    ``f"{words.root} {path}: problem"``."""

    root: str = "--zl-compare"  # before an A/B root or a run directory
    out: str = "--zl-out"  # before the directory a comparison writes
    allow: str = "--zl-allow-caliber-mismatch"
    fail_beyond: str = "--zl-fail-beyond"
    floor_from: str = "--zl-floor-from"  # before the A/A control root a floor is taken from


PYTEST_WORDS = Words()


def command_words(command: str) -> Words:
    """The words of ``zlbench COMMAND``: ``zlbench report: ROOT: ...``, ``--fail-beyond``."""
    head = f"zlbench {command}:"
    return Words(
        head, f"{head} -o", "--allow-caliber-mismatch", "--fail-beyond", f"{head} --floor-from"
    )


def terminal_writer(config: pytest.Config) -> Any:
    # --zl-compare answers from pytest_cmdline_main, before the terminal reporter exists
    from .terminal_line import Writer

    return Writer(sys.stdout, str(config.getoption("color", "auto")))


def run_compare(config: pytest.Config) -> int:
    """``--zl-compare``: pair two run directories into ``--zl-out`` (else a fresh directory
    under runs/), or re-aggregate one A/B root in place; the session's exit status. With
    ``--zl-compare-to=NAME`` the stored run NAME is side A and the one ``--zl-compare`` side B."""
    mode = _common.mode_of(config)
    paths: list[str | Path] = list(mode.paths)
    allow: bool = _common.value(config, "zl_allow_caliber_mismatch")
    if _common.raw(config, "zl_save"):
        raise pytest.UsageError(
            "--zl-save stores a recorded run or a screen; --zl-compare records neither"
        )
    name = _common.raw(config, "zl_compare_to")
    if name:
        from ..recording.stored import stored_run

        if len(paths) != 1:
            raise pytest.UsageError(
                f"--zl-compare-to pairs the stored run with one run directory, got {len(paths)}"
            )
        paths.insert(0, stored_run(config, str(name)))
    limit = fail_beyond(config)
    floor_from = _common.raw(config, "zl_floor_from")
    words = replace(PYTEST_WORDS, floor_from=_common.named(config, "zl_floor_from"))
    return compare_paths(
        paths,
        mode.out,
        allow,
        terminal_writer(config),
        config,
        limit,
        words=words,
        floor_from=Path(str(floor_from)) if floor_from else None,
        judging=judging_given(config),
        unjudged_ok=allow_unjudged(config),
    )


def judging_given(config: pytest.Config) -> dict[str, float]:
    """The judging settings the session gave (``--zl-fdr``, ``--zl-min-effect``), by field:
    those it did not give stay as the root being judged again was judged."""
    given = {"fdr": "zl_fdr", "min_effect": "zl_min_effect"}
    return {
        field: _common.value(config, dest)
        for field, dest in given.items()
        if _common.raw(config, dest) is not None
    }


def kept_control(root: Path, tw: Any, words: Words) -> Path | None:
    """The separate A/A control ``root`` was judged against before, where it still exists: a
    root judged again without one named keeps it (said in one line), rather than falling back
    to its own floor without a word."""
    before = result_file.read_result(root) or {}
    floor = before.get("noise_floor")
    if not isinstance(floor, dict) or floor.get("source") != CONTROL_ROOT:
        return None
    control = floor.get("root")
    if not isinstance(control, str):
        return None
    if not Path(control).is_dir():
        tw.line(
            f"zlbench: {root}: its separate A/A control {control} is gone: judged against its "
            f"own floor ({words.floor_from} names another control)",
            yellow=True,
        )
        return None
    tw.line(
        f"zlbench: {root}: judged against the separate A/A control it was judged against "
        f"before, {control} ({words.floor_from} names another)"
    )
    return Path(control)


def compare_paths(
    paths: Sequence[str | Path],
    out: str | Path | None,
    allow: bool,
    tw: Any,
    config: pytest.Config | None = None,
    fail_beyond: float | None = None,
    words: Words = PYTEST_WORDS,
    floor_from: Path | None = None,
    judging: Mapping[str, float] | None = None,
    unjudged_ok: bool = False,
) -> int:
    """The one implementation of ``--zl-compare`` and ``zlbench compare``/``zlbench report``:
    two run directories paired into ``out`` (else a fresh directory under runs/), or one A/B
    root re-aggregated in place. ``tw`` is anything with pytest's terminal writer's ``line``
    and ``sep``; bad input raises :class:`pytest.UsageError` in one line naming the option or
    argument as ``words`` do; returns the exit status, the gate's (``core.gate``) when
    ``fail_beyond`` (a percentage) is given and an operator got slower by more. With
    ``floor_from`` an A/B root is judged against the floor of that A/A control root."""
    if len(paths) not in (1, 2):
        raise pytest.UsageError(
            f"--zl-compare takes one A/B root or two run directories, got {len(paths)}"
        )
    if len(paths) == 1:
        if out:
            raise pytest.UsageError(
                "--zl-compare with one A/B root rewrites that root's screen.tsv: drop --zl-out"
            )
        from ..claim import SCREEN
        from ..core.rundir import kind_of

        if kind_of(Path(paths[0])) != SCREEN:  # refused by reaggregate in its own words
            return reaggregate(
                Path(paths[0]), allow, tw, fail_beyond, words, floor_from, judging, unjudged_ok
            )
        with _hold(config, SCREEN, Path(paths[0]), option=words.root) as held:
            rc = reaggregate(
                Path(paths[0]), allow, tw, fail_beyond, words, floor_from, judging, unjudged_ok
            )
            held.keep()
        return rc
    if floor_from is not None:
        raise pytest.UsageError(
            f"{words.floor_from} judges the rounds of one A/B root; two runs compared have one "
            "round and nothing to judge"
        )
    from ..claim import COMPARE

    root = Path(out) if out else default_root()
    with _hold(config, COMPARE, root, option=words.out, resume=False) as held:
        rc = compare_two(
            Path(paths[0]), Path(paths[1]), root, allow, tw, fail_beyond, words, unjudged_ok
        )
        if rc in (0, REGRESSION_EXIT):
            held.keep()
    return rc


def _hold(
    config: pytest.Config | None,
    kind: str,
    path: Path,
    option: str = "--zl-out",
    resume: bool = True,
) -> AbstractContextManager[Any]:
    """The directory's claim for this comparison: for the session under pytest, for the
    command's run under ``zlbench``. ``resume``: the directory may hold results of ``kind``
    (an A/B root re-aggregated in place); a comparison's ``-o`` may not."""
    from ..claim import claiming, holding

    if config is None:
        return holding(kind, path, resume=resume, option=option)
    return claiming(config, kind, path, resume=resume, option=option)


def refuse(tw: Any, words: Words = PYTEST_WORDS) -> int:
    caliber_line(tw, f"{CALIBER_PREFIX} refusing to compare; {words.allow} overrides")
    return int(pytest.ExitCode.USAGE_ERROR)


def compare_two(
    path_a: Path,
    path_b: Path,
    root: Path,
    allow: bool,
    tw: Any,
    limit: float | None = None,
    words: Words = PYTEST_WORDS,
    unjudged_ok: bool = False,
) -> int:
    sides: list[Side] = []
    identity_problem = False
    errors: list[str] = []
    for label, path in (("A", path_a), ("B", path_b)):
        if marked_kind(path) == SCREEN or (path / SETTINGS_FILE).is_file():
            reads = "--zl-compare=ROOT alone" if words == PYTEST_WORDS else "zlbench report"
            errors.append(
                f"{words.root} {label}: {path}: an A/B screen root, not a run directory "
                f"({reads} reads it)"
            )
            continue
        try:
            sides.append(load_side(path))
        except IdentityError as exc:
            caliber_line(tw, unreadable(label, str(exc)).line())
            identity_problem = True
        except RecordError as exc:
            errors.append(f"{words.root} {label}: {exc}")
    if identity_problem:
        return int(pytest.ExitCode.USAGE_ERROR)
    if errors:
        raise pytest.UsageError("; ".join(errors))
    if path_a.resolve() == path_b.resolve():  # after the checks of a run (a partial one's)
        raise pytest.UsageError(
            f"{words.root} A and B are the same run directory ({path_a.resolve()}): compare "
            "two runs"
        )
    a, b = sides
    problems = caliber_check(a.identity, b.identity, str(path_a), str(path_b))
    for problem in problems:
        caliber_line(tw, problem.line())
    if any(p.fatal for p in problems) and not allow:
        return refuse(tw, words)
    notes = [f"caliber mismatch allowed: {p.field}" for p in problems if p.fatal]
    notes += [f"caliber warning: {p.field}" for p in problems if not p.fatal]
    if (a.ir is not None and a.ir.entries) or (b.ir is not None and b.ir.entries):
        notes.append(
            "IR compared over the whole run"
        )  # ir.json does not say which op compiled what
    ops = sorted({r.op for r in a.rows} | {r.op for r in b.rows})
    results = []
    for op in ops:
        rnd = screening.RoundInput.of_sides(1, "AB", a, b, op)
        results.append(screening.aggregate(op, [rnd], notes))
    results = screening.judge_screen(results)  # one noise floor for every operator of the pair
    paths = {
        "a": {"path": str(path_a.resolve()), "source": a.source},
        "b": {"path": str(path_b.resolve()), "source": b.source},
    }
    entries = [r.to_json() for r in results]
    try:
        root.mkdir(parents=True, exist_ok=True)
        records.write_json(
            root / COMPARE_FILE,
            {"schema_version": result.SCHEMA_VERSION, **paths, "ops": entries},
        )
    except OSError as exc:
        raise pytest.UsageError(f"{words.out} {root}: not writable ({exc.strerror})") from None
    doc = result.document(result.COMPARE, entries, sides=paths)
    return exit_status(0, publish(root, doc, tw, limit, words.fail_beyond, unjudged_ok=unjudged_ok))


def _settings(root: Path) -> dict[str, Any] | None:
    """A screen root's ``screen.json``: None for a root of a version that wrote none; a usage
    error for one that cannot be read, whose switch is not NAME: VALUE, or whose rounds are not
    a whole number (the table would look whole and its result lose the switch)."""
    path = root / SETTINGS_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"{path}: unreadable ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise pytest.UsageError(f"{path}: not an object")
    switch = data.get("switch")
    if switch is not None and not (
        isinstance(switch, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in switch.items())
    ):
        raise pytest.UsageError(f"{path}: switch is not an object of NAME: VALUE")
    rounds = data.get("rounds")
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int)):
        raise pytest.UsageError(f"{path}: rounds is not a whole number")
    return data


def reaggregate(
    root: Path,
    allow: bool,
    tw: Any,
    limit: float | None = None,
    words: Words = PYTEST_WORDS,
    floor_from: Path | None = None,
    judging: Mapping[str, float] | None = None,
    unjudged_ok: bool = False,
) -> int:
    """An A/B root aggregated and judged again, in place, as its result file says it was
    judged, but for the settings ``judging`` gives (``fdr``, ``min_effect``)."""
    if not root.is_dir():
        raise pytest.UsageError(f"{words.root} {root}: {not_a_dir(root)}")
    op_dirs = sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob(ROUND_GLOB)))
    if not op_dirs:
        # --zl-compare takes one A/B root or two run directories; zlbench report one root
        what = "neither a run directory pair nor" if words == PYTEST_WORDS else "not"
        raise pytest.UsageError(
            f"{words.root} {root}: {what} an A/B root (no <op>/r<k>_A directories)"
        )
    settings = _settings(root)
    results = []
    kept: dict[str, KeptResult] = {}  # finished operators with a damaged file: never judged again
    problems: list[str] = []
    for op_dir in op_dirs:
        aggregated, found = read_op_dir(op_dir, allow=allow, require_done=True)
        if isinstance(aggregated, KeptResult):
            kept[op_dir.name] = aggregated
            tw.line(aggregated.line(op_dir), yellow=True)
            continue
        problems += found
        results.append((op_dir, aggregated))
    for problem in problems:
        caliber_line(tw, problem)
    if refusing(problems, allow):
        return refuse(tw, words)
    floor = None  # the screen's own: its A/A control operators', else its NO_IR_DIFF ones'
    if floor_from is None:
        floor_from = kept_control(root, tw, words)
    if floor_from is not None:
        from .control_floor import check_caliber, control_floor

        floor = control_floor(floor_from, words.floor_from)
        for line in check_caliber(root, floor_from, allow, words.floor_from, words.allow):
            caliber_line(tw, line)
    recorded = Judging.of_document(result_file.read_result(root))
    judged = screening.judge_screen(
        [r for _, r in results], floor, judging=replace(recorded, **(judging or {}))
    )
    results = [(op_dir, r) for (op_dir, _), r in zip(results, judged, strict=True)]
    try:
        for op_dir, res in results:
            write_op_result(op_dir, res)  # drawn by publish, after the table
    except OSError as exc:
        raise pytest.UsageError(
            f"{words.root} {root}: not writable ({exc.strerror or exc})"
        ) from None
    # unfinished when their session was interrupted: still cut, and no failure of their own
    named_cut = cut_ops(root)  # read once: the result file grows with the screen
    cut = {d.name for d, _ in results if d.name in named_cut and not is_done(d)}
    entries = [
        {**r.to_json(), "status": result.CUT} if d.name in cut else r.to_json() for d, r in results
    ]
    entries += [k.to_json() for k in kept.values()]
    entries += left_out(root, {d.name for d in op_dirs})  # listed, but no round begun
    entries.sort(key=lambda e: str(e["op"]))
    switch = (settings or {}).get("switch")
    observed = observe(root, switch if isinstance(switch, dict) else None)
    doc = result.document(
        result.SCREEN, entries, settings=settings, cut=bool(cut), observed=observed
    )
    out = publish(
        root,
        doc,
        tw,
        limit,
        words.fail_beyond,
        replot=results,
        floor_from=floor_from,
        unjudged_ok=unjudged_ok,
    )
    failed = any(r.rounds_failed for d, r in results if d.name not in cut)
    failed = failed or any(k.rounds_failed for k in kept.values())
    return exit_status(int(pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK), out)
