"""``zlbench``: the results of runs and screens without a pytest session.

``compare`` and ``report`` run the same code as ``pytest --zl-compare`` (``screen.compare``);
``plot`` draws what a screen draws; ``merge`` joins a screen run in parts (``--zl-shard``);
``list`` shows the baseline store (``--zl-save``). ``python -m pytest_zlbench`` runs it too.
Bad input is one ``ERROR:`` line that starts ``zlbench COMMAND:`` and names the argument in the
command's own words (``-o``, ``--allow-caliber-mismatch``, never a ``--zl-*`` option), exit
status 4 as for pytest's usage errors.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from .screen.terminal_line import Writer

USAGE_ERROR = 4  # pytest.ExitCode.USAGE_ERROR, without importing pytest for --help

DESCRIPTION = "Compare, report, plot, merge and list pytest-zlbench runs and screens."
EPILOG = (
    "output folders: -o names a new or empty folder (one that holds results is refused, never "
    "overwritten); leave it out for a fresh runs/zl_<UTC time>; report rewrites only the files "
    "it derives from its ROOT's rounds. "
    "the store: --store DIR (before or after the command), else the nearest .zlbench up from "
    "here, else ./.zlbench; it holds a .gitignore of '*', so git leaves it out of your checkout. "
    "exit status: 0 success; 1 an operator failed (report) or a plot could not be drawn "
    "(plot); 2 interrupted while drawing the plots (report); 4 bad input or a caliber "
    "refusal; 6 a shape slower beyond noise than --fail-beyond allows; 7 --fail-beyond could "
    "not judge every operator (--allow-unjudged accepts that); 141 the reader of the output "
    "went away (zlbench list | head)"
)
BROKEN_PIPE = 141  # 128 + SIGPIPE, the status of a command the shell's reader stopped


class Usage(Exception):
    """One line naming the problem, starting ``zlbench COMMAND:``; exit status 4."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise Usage(f"{self.prog}: {message}")


def default_store() -> Path:
    """The ``.zlbench`` of the nearest folder up from here that has one, else ``./.zlbench``."""
    from .core.store import STORE_DIR

    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / STORE_DIR).is_dir():
            return folder / STORE_DIR
    return here / STORE_DIR


def store_of(args: argparse.Namespace) -> Any:
    from .core.store import Store

    return Store(Path(args.store) if args.store else default_store())


def find_stored(store: Any, name: str, kind: str, where: str) -> Any:
    """The entry ``name`` of ``store``, of any kind; a name that is not stored is a usage error
    that starts with ``where`` and says what was looked for (a directory, a stored ``kind``).
    A store whose index cannot be read says so, not that the name is missing."""
    from .core.store import StoreError, check_name

    try:
        store.entries()
    except StoreError as exc:
        raise Usage(f"{where}: no such directory, and the store cannot be read: {exc}") from None
    try:
        check_name(name)
        return store.find(name)
    except StoreError:
        raise Usage(f"{where}: no such directory, nor a stored {kind} in {store.root}") from None


def resolve_run(arg: str, args: argparse.Namespace, label: str) -> Path:
    """A run directory, or the name of a stored run."""
    path = Path(arg)
    if path.exists():
        return path
    store = store_of(args)
    entry = find_stored(store, arg, "run", f"zlbench compare: {label}: {arg}")
    if entry.kind != "run":
        raise Usage(f"zlbench compare: {label}: {arg}: a stored {entry.kind}, not a run")
    return Path(store.path_of(entry))


# --------------------------------------------------------------------------------------------
# Commands


def cmd_compare(args: argparse.Namespace) -> int:
    """pair two run directories (or stored runs), as pytest --zl-compare=A --zl-compare=B

    Pair two run directories, or names of stored runs (zlbench list): compare.json and screen.tsv
    in OUT, the same as pytest --zl-compare=A --zl-compare=B --zl-out=OUT."""
    from .screen.compare import command_words, compare_paths

    paths = [resolve_run(args.a, args, "A"), resolve_run(args.b, args, "B")]
    return compare_paths(
        paths,
        args.out,
        args.allow_caliber_mismatch,
        Writer(),
        fail_beyond=args.fail_beyond,
        words=command_words("compare"),
        unjudged_ok=args.allow_unjudged,
    )


def report_files(root: Path) -> list[Path]:
    """The report files of a re-aggregated A/B root, written from its ``screen_result.json``:
    ``report.html`` (and ``overview.svg``/``.png`` when matplotlib is installed)."""
    from .screen import result_file

    doc = result_file.read_result(root)
    if doc is None:
        return []
    return result_file.write_report(root, doc)


def cmd_report(args: argparse.Namespace) -> int:
    """re-aggregate an A/B root and show its screen, as pytest --zl-compare=ROOT

    Re-aggregate an A/B root in place (ab.json, screen.tsv) and show the screen table; the name
    of a stored screen shows it as stored. With --floor-from AA_ROOT its shapes are judged
    against the noise floor of that A/A control screen."""
    from .screen.compare import command_words, compare_paths

    root = Path(args.root)
    tw = Writer()
    if not root.exists():
        if args.floor_from:
            raise Usage(
                f"zlbench report: {root}: no such directory (--floor-from judges an A/B root's "
                "rounds; a stored screen keeps no rounds)"
            )
        return show_stored_screen(args, tw)
    from .contract import SETTINGS_FILE
    from .core.rundir import SCREEN, marked_kind

    # never write a screen's files into a folder that only looks like one
    if marked_kind(root) != SCREEN and not (root / SETTINGS_FILE).is_file():
        raise Usage(
            f"zlbench report: {root}: not an A/B root (no screen.json or .zl_kind of a screen)"
        )
    # compare_paths writes screen_result.json and, from it, report.html (report_files)
    return compare_paths(
        [root],
        None,
        args.allow_caliber_mismatch,
        tw,
        fail_beyond=args.fail_beyond,
        words=command_words("report"),
        floor_from=Path(args.floor_from) if args.floor_from else None,
        judging=judging_args(args),
        unjudged_ok=args.allow_unjudged,
    )


def judging_args(args: argparse.Namespace) -> dict[str, float]:
    """``--fdr`` and ``--min-effect`` where given, by field (a relative minimum effect): what
    is not given stays as the root was judged."""
    given = {"fdr": args.fdr, "min_effect": args.min_effect}
    return {
        field: value / 100 if field == "min_effect" else value
        for field, value in given.items()
        if value is not None
    }


def show_stored_screen(args: argparse.Namespace, tw: Writer) -> int:
    """``zlbench report NAME`` of a stored screen: its ``screen.tsv`` as stored (the rounds are
    not stored, so it cannot be aggregated again)."""
    from .core import screening
    from .screen.results import read_screen

    store = store_of(args)
    entry = find_stored(store, args.root, "screen", f"zlbench report: {args.root}")
    if entry.kind != "screen":
        raise Usage(f"zlbench report: {args.root}: a stored {entry.kind}; report shows screens")
    try:
        lines = read_screen(store.path_of(entry))
    except (ValueError, OSError) as exc:
        raise Usage(f"zlbench report: {args.root}: {exc}") from None
    tw.sep("=", f"zlbench screen (stored {entry.name}, {entry.saved_at})")
    for text in screening.render_screen(lines):
        tw.line(text)
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    """draw each operator's delta.svg of an A/B root (needs matplotlib)

    Draw <ROOT>/<op>/delta.svg for every operator with a range, as a screen does; exit status 1
    when matplotlib is not installed or a plot could not be drawn (one line each)."""
    import importlib.util

    from .adapters import plot
    from .contract import ROUND_GLOB
    from .core.rundir import not_a_dir
    from .screen.results import KeptResult, draw_in_processes, read_op_dir

    root = Path(args.root)
    if not root.is_dir():
        raise Usage(f"zlbench plot: {root}: {not_a_dir(root)}")
    op_dirs = sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob(ROUND_GLOB)))
    if not op_dirs:
        raise Usage(f"zlbench plot: {root}: not an A/B root (no <op>/r<k>_A directories)")
    tw = Writer()
    floor = None  # the screen's one floor, as report judges
    from .screen.compare import command_words, kept_control

    # without --floor-from, the separate A/A control the root was judged against, as report
    aa_root = (
        Path(args.floor_from) if args.floor_from else kept_control(root, tw, command_words("plot"))
    )
    if aa_root is not None:
        from .screen.control_floor import check_caliber, control_floor
        from .screen.results import caliber_line

        where = "zlbench plot: --floor-from"
        floor = control_floor(aa_root, where)
        allow = args.allow_caliber_mismatch
        for text in check_caliber(root, aa_root, allow, where, "--allow-caliber-mismatch"):
            caliber_line(tw, text)
    # every argument is checked: only now does a missing matplotlib decide (it is not the
    # answer to a wrong argument)
    if importlib.util.find_spec("matplotlib") is None or not plot.available():
        tw.line(f"zlbench: {plot.MISSING} for the {len(op_dirs)} operator(s) of {root}")
        return 1
    results = []
    finished: dict[Path, Any] = {}  # finished, a file damaged: drawn as their ab.json holds
    for op_dir in op_dirs:
        result, _ = read_op_dir(op_dir, allow=args.allow_caliber_mismatch, require_done=True)
        if isinstance(result, KeptResult):
            finished[op_dir] = result.to_json()
            tw.line(result.line(op_dir))
        else:
            results.append((op_dir, result))
    from .core import result as result_doc
    from .core import screening
    from .core.judge import Judging
    from .screen.result_file import read_result

    judged = screening.judge_screen(
        [r for _, r in results], floor, judging=Judging.of_document(read_result(root))
    )
    plots: list[tuple[Path, Any]] = [
        (d, r) for (d, _), r in zip(results, judged, strict=True)
    ] + list(finished.items())
    plots.sort(key=lambda pair: pair[0].name)
    failed = 0
    # a plot that already shows its result is kept as it is, and said so
    kept = {op_dir for op_dir, result in plots if plot.shows(op_dir / plot.PLOT_FILE, result)}
    try:
        draw_in_processes(plots)  # many plots: most of them drawn in a few processes
        for op_dir, result in plots:
            path = op_dir / plot.PLOT_FILE
            drawn = plot.draw(path, result, op_dir.name, inside=root)
            if drawn:
                tw.line(
                    f"zlbench: {path}: up to date" if op_dir in kept else f"zlbench: drew {path}"
                )
            elif drawn is None:
                failed += 1  # its line is on stderr
            else:
                entry = plot.entry_of(result)
                tw.line(f"zlbench: {op_dir.name}: {entry.get('verdict')}, no range: no plot")
        entries = [plot.entry_of(r) for _, r in plots]
        doc = result_doc.document(result_doc.SCREEN, entries)
        drawn = plot.draw_overview(root / plot.OVERVIEW_FILE, doc, inside=root)
        if drawn:
            tw.line(f"zlbench: drew {root / plot.OVERVIEW_FILE} and {root / plot.OVERVIEW_PNG}")
        elif drawn is None:  # as a failed operator's plot: its line is on stderr
            failed += 1
    except OSError as exc:
        raise Usage(f"zlbench plot: {root}: not writable ({exc.strerror or exc})") from None
    return 1 if failed else 0


def cmd_merge(args: argparse.Namespace) -> int:
    """join the parts of a screen run with --zl-shard into one root

    Join screen roots run in parts (--zl-shard=K/N) into OUT. A part whose settings or caliber
    differ, that repeats a shard, or that screened an operator another part screened, is refused."""
    from .screen.merge import merge
    from .screen.settings import default_root

    return merge(args.roots, args.out or default_root(), Writer())


def cmd_list(args: argparse.Namespace) -> int:
    """show the baseline store

    Show the runs and screens stored with --zl-save: name, kind, time, the FlagGems commit and
    the caliber key (the folder they are stored in)."""
    from .core.render import table
    from .core.store import list_lines

    store = store_of(args)
    entries = store.entries()
    tw = Writer()
    if not entries:
        tw.line(f"zlbench: {store.root}: nothing stored")
        return 0
    for text in table(
        ("name", "kind", "saved (UTC)", "commit", "caliber key"), list_lines(entries)
    ):
        tw.line(text)
    tw.line(f"zlbench: store {store.root}")
    return 0


def _command(sub: Any, name: str, func: Any) -> Any:
    """The subcommand ``name``, run by ``func``: the first paragraph of the function's docstring
    is the command's line in ``zlbench --help``, the rest its description."""
    help, _, description = (func.__doc__ or "").partition("\n\n")  # none under python -OO
    p = sub.add_parser(name, help=help, description=description)
    p.set_defaults(func=func)
    return p


def _allow_caliber_mismatch(p: Any) -> None:
    p.add_argument(
        "--allow-caliber-mismatch",
        action="store_true",
        help="compare despite caliber mismatches (each is still printed)",
    )


def _fail_beyond(p: Any) -> None:
    p.add_argument(
        "--fail-beyond",
        metavar="PCT",
        type=percent,
        help="exit with status 6 when any shape is slower on side B beyond noise by more than "
        "PCT percent (its estimate; compare, one round: the median over every shape), with 7 "
        "when nothing regressed but some operator could not be judged, as pytest "
        "--zl-fail-beyond=PCT",
    )


def _allow_unjudged(p: Any) -> None:
    p.add_argument(
        "--allow-unjudged",
        action="store_true",
        help="let --fail-beyond pass over operators it could not judge (failed, cut, one "
        "round): it exits with status 7 otherwise, as pytest --zl-allow-unjudged",
    )


def _judging(p: Any) -> None:
    p.add_argument(
        "--fdr",
        metavar="Q",
        type=fdr,
        help="the false discovery rate held across the screen's shapes (default: what the root "
        "was judged with, else 0.05), as pytest --zl-fdr=Q",
    )
    p.add_argument(
        "--min-effect",
        metavar="PCT",
        type=percent,
        help="the smallest change called beyond noise, in percent (default: what the root was "
        "judged with, else 0.2), as pytest --zl-min-effect=PCT",
    )


def _argument(parse: Any, text: str) -> float:
    """``parse(text, OPTION)`` for argparse: its one-line refusal without the option's name
    (argparse names the argument itself: not twice)."""
    try:
        return float(parse(text, "OPTION"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("OPTION: ")) from None


def fdr(text: str) -> float:
    from .core.parsing import parse_fdr

    return _argument(parse_fdr, text)


def _floor_from(p: Any) -> None:
    p.add_argument(
        "--floor-from",
        metavar="AA_ROOT",
        type=given,
        help="judge the shapes against the noise floor of this A/A control screen's root (of "
        "the same caliber) instead of the screen's own, as pytest --zl-floor-from=AA_ROOT",
    )


def _store(p: Any, default: Any) -> None:
    p.add_argument(
        "--store",
        metavar="DIR",
        type=given,
        default=default,
        help="the baseline store (default: the nearest .zlbench up from here, else ./.zlbench; "
        "it keeps itself out of git with a .gitignore of '*')",
    )


def given(text: str) -> str:
    """A path or name argument: an empty one (an unset shell variable) is refused, not read as
    the argument's default or as the current folder."""
    if not text:
        raise argparse.ArgumentTypeError("is empty")
    return text


def percent(text: str) -> float:
    from .core.gate import parse_percent

    return _argument(parse_percent, text)


def build_parser() -> Parser:
    parser = Parser(prog="zlbench", description=DESCRIPTION, epilog=EPILOG)
    _store(parser, default=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = _command(sub, "compare", cmd_compare)
    p.add_argument(
        "a", metavar="A", type=given, help="side A: a run directory or a stored run's name"
    )
    p.add_argument(
        "b", metavar="B", type=given, help="side B: a run directory or a stored run's name"
    )
    p.add_argument(
        "-o",
        "--out",
        metavar="OUT",
        type=given,
        help="a new or empty directory (default: runs/zl_<time>)",
    )
    _allow_caliber_mismatch(p)
    _fail_beyond(p)
    _allow_unjudged(p)

    p = _command(sub, "report", cmd_report)
    p.add_argument(
        "root", metavar="ROOT", type=given, help="an A/B root, or a stored screen's name"
    )
    _allow_caliber_mismatch(p)
    _fail_beyond(p)
    _allow_unjudged(p)
    _judging(p)
    _floor_from(p)

    p = _command(sub, "plot", cmd_plot)
    p.add_argument("root", metavar="ROOT", type=given, help="an A/B root")
    _allow_caliber_mismatch(p)
    _floor_from(p)

    p = _command(sub, "merge", cmd_merge)
    p.add_argument("roots", metavar="ROOT", nargs="+", type=given, help="the parts' screen roots")
    p.add_argument(
        "-o",
        "--out",
        metavar="OUT",
        type=given,
        help="a new or empty directory (default: runs/zl_<time>)",
    )

    _command(sub, "list", cmd_list)
    for command in sub.choices.values():  # --store before or after the command
        _store(command, default=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``zlbench`` console script; returns the exit status."""
    import pytest

    from .core.records import RecordError
    from .core.store import StoreError

    command = None
    try:
        args = build_parser().parse_args(argv)
        command = args.command
        return int(args.func(args))
    except (Usage, pytest.UsageError, StoreError, RecordError) as exc:
        sys.stdout.flush()
        sys.stderr.write(f"ERROR: {error_line(str(exc), command)}\n")
        return USAGE_ERROR
    except BrokenPipeError:
        # the reader went away (``zlbench list | head -3``): no traceback, and none at exit
        # when Python flushes stdout into the closed pipe again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return BROKEN_PIPE


def error_line(text: str, command: str | None) -> str:
    """``text`` as the command's error: one line that starts ``zlbench COMMAND:`` (what a
    shared module raised names a path or a file, not the command)."""
    head = f"zlbench {command}" if command else "zlbench"
    text = " ".join(text.split())
    return text if text.startswith(head) else f"{head}: {text}"


if __name__ == "__main__":
    sys.exit(main())
