"""The A/B screen's machinery: operator items, child runs, aggregation and ``--zl-compare``.

Imported only when ``--zl-ab``, ``--zl-rounds`` or ``--zl-compare`` is given, so an installed but
inactive ``zlbench.ab`` costs no more than its option definitions.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from . import _common, lifeline
from ._common import ab_controller_key, op_id
from .core import records, screening
from .core.caliber import PREFIX as CALIBER_PREFIX
from .core.caliber import check as caliber_check
from .core.caliber import is_fatal, refusing, unreadable
from .core.parsing import (
    Switch,
    parse_bool,
    parse_positive_float,
    parse_positive_int,
    parse_switch,
    repeated_failure,
    switches_env,
)
from .core.records import RecordError, RunIdentity
from .core.rundir import IdentityError, Side, load_side

#: options that never pass through to a child (with whether they take a value): ours, xdist's
#: (a child is one process), the cache's (children run with -p no:cacheprovider) and those
#: naming one file or directory that concurrent children would share
OWN_OPTIONS = {
    "--zl-ab": True,
    "--zl-rounds": True,
    "--zl-allow-no-ir-diff": False,
    "--zl-out": True,
    "--zl-compare": True,
    "--zl-allow-caliber-mismatch": False,
    "--zl-timeout": True,
    "--zl-resume": False,
    "--zl-devices": True,
    "--zl-replay-from": True,
    "--zl-backend": True,
    "-n": True,
    "--numprocesses": True,
    "--dist": True,
    "--tx": True,
    "--maxprocesses": True,
    "--max-worker-restart": True,
    "--lf": False,
    "--last-failed": False,
    "--ff": False,
    "--failed-first": False,
    "--nf": False,
    "--new-first": False,
    "--cache-clear": False,
    "--lfnf": True,
    "--last-failed-no-failures": True,
    "--sw": False,
    "--stepwise": False,
    "--sw-skip": False,
    "--stepwise-skip": False,
    "--sw-reset": False,
    "--stepwise-reset": False,
    "--basetemp": True,
    "--junitxml": True,
    "--junit-xml": True,
    "--junitprefix": True,
    "--junit-prefix": True,
}
#: ini names a child must not inherit: they would make it screen again, or re-pin its card
CHILD_INI_RESET = ("zl_ab", "zl_rounds", "zl_compare", "zl_devices", "zl_resume")
#: set in every child's environment; a child that is asked to screen again refuses
CHILD_ENV = "ZLBENCH_AB_CHILD"
OP_DONE = "op.complete"
#: notes the controller adds to an operator (a retry that passed, a dtype fallback), one a line
NOTES_FILE = "notes.txt"
SCREEN_FILE = "screen.tsv"
SETTINGS_FILE = "screen.json"
#: what an operator id may look like: it names a directory under the screen's root
_OP_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+=-]*$")
#: FlagGems refusing the requested ``--dtypes`` before producing any row (``set_dtypes``)
_DTYPE_REFUSAL = re.compile(
    r"ValueError: .*dtype.*(not supported|can't be supported|cannot be supported|unsupported)",
    re.IGNORECASE,
)
#: durations in pytest's summary lines ("1 failed in 0.12s"): not part of a failure's identity
_DURATION = re.compile(r"\b\d+(\.\d+)?s\b")
_EXIT_MEANING = {
    1: "tests failed",
    2: "interrupted",
    3: "internal error",
    4: "usage error",
    5: "no tests collected",
}


@dataclass(frozen=True)
class AbSettings:
    root: Path
    switches: tuple[Switch, ...]
    env_b: dict[str, str]
    rounds: int
    allow_no_ir_diff: bool
    timeout: float | None
    resume: bool
    backend: str
    flagtree_prefix: str
    replay_from: Path | None = None
    allow_caliber_mismatch: bool = False

    def describe(self) -> dict[str, Any]:
        """What must match for ``--zl-resume`` to continue a screen (``screen.json``)."""
        return {
            "switch": dict(self.env_b),
            "rounds": self.rounds,
            "backend": self.backend,
            "allow_no_ir_diff": self.allow_no_ir_diff,
            "replay_from": str(self.replay_from) if self.replay_from else None,
        }


def _default_root() -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path("runs") / f"zl_{stamp}"


def _ab_requested(config: pytest.Config) -> bool:
    return _common.raw(config, "zl_ab") is not None or _common.raw(config, "zl_rounds") is not None


def _terminal_writer(config: pytest.Config) -> Any:
    # --zl-compare answers from pytest_cmdline_main, before the terminal reporter exists
    from _pytest.config import create_terminal_writer

    return create_terminal_writer(config, sys.stdout)


# --------------------------------------------------------------------------------------------
# --zl-compare


def run_compare(config: pytest.Config) -> int | None:
    paths = _common.raw(config, "zl_compare")
    if not paths:
        return None
    if _ab_requested(config):
        raise pytest.UsageError(
            "--zl-compare runs no tests: it cannot be combined with --zl-ab/--zl-rounds"
        )
    allow = _common.get(config, "zl_allow_caliber_mismatch", parse_bool, False)
    out = _common.raw(config, "zl_out")
    if len(paths) not in (1, 2):
        raise pytest.UsageError(
            f"--zl-compare takes one A/B root or two run directories, got {len(paths)}"
        )
    tw = _terminal_writer(config)
    from .claim import COMPARE, SCREEN, claiming
    from .core.rundir import kind_of

    if len(paths) == 1:
        if out:
            raise pytest.UsageError(
                "--zl-compare with one A/B root rewrites that root's screen.tsv: drop --zl-out"
            )
        if kind_of(Path(paths[0])) != SCREEN:  # refused by _reaggregate in its own words
            return _reaggregate(Path(paths[0]), allow, tw)
        with claiming(config, SCREEN, Path(paths[0]), resume=True, option="--zl-compare") as held:
            rc = _reaggregate(Path(paths[0]), allow, tw)
            held.keep()
        return rc
    root = Path(str(out)) if out else _default_root()
    with claiming(config, COMPARE, root, resume=True) as held:
        rc = _compare_two(Path(paths[0]), Path(paths[1]), root, allow, tw)
        if rc == 0:
            held.keep()
    return rc


def _caliber_line(tw: Any, text: str) -> None:
    """A caliber line in red (a refusal) or yellow (a warning); ``tw`` is a terminal writer or
    pytest's terminal reporter."""
    tw.line(text, red=is_fatal(text), yellow=not is_fatal(text))


def _refuse(tw: Any) -> int:
    _caliber_line(
        tw, f"{CALIBER_PREFIX} refusing to compare; --zl-allow-caliber-mismatch overrides"
    )
    return int(pytest.ExitCode.USAGE_ERROR)


def _compare_two(path_a: Path, path_b: Path, root: Path, allow: bool, tw: Any) -> int:
    sides: list[Side] = []
    identity_problem = False
    errors: list[str] = []
    for label, path in (("A", path_a), ("B", path_b)):
        try:
            sides.append(load_side(path))
        except IdentityError as exc:
            _caliber_line(tw, unreadable(label, str(exc)).line())
            identity_problem = True
        except RecordError as exc:
            errors.append(f"--zl-compare {label}: {exc}")
    if identity_problem:
        return int(pytest.ExitCode.USAGE_ERROR)
    if errors:
        raise pytest.UsageError("; ".join(errors))
    a, b = sides
    problems = caliber_check(a.identity, b.identity, str(path_a), str(path_b))
    for problem in problems:
        _caliber_line(tw, problem.line())
    if any(p.fatal for p in problems) and not allow:
        return _refuse(tw)
    notes = [f"caliber mismatch allowed: {p.field}" for p in problems if p.fatal]
    notes += [f"caliber warning: {p.field}" for p in problems if not p.fatal]
    if (a.ir is not None and a.ir.entries) or (b.ir is not None and b.ir.entries):
        notes.append(
            "IR compared over the whole run"
        )  # ir.json does not say which op compiled what
    ops = sorted({r.op for r in a.rows} | {r.op for r in b.rows})
    results = []
    for op in ops:
        rnd = screening.RoundInput(
            round=1,
            order="AB",
            rows_a=[r for r in a.rows if r.op == op],
            rows_b=[r for r in b.rows if r.op == op],
            ir_a=a.ir,
            ir_b=b.ir,
            identity_a=a.identity,
            identity_b=b.identity,
        )
        results.append(screening.aggregate(op, [rnd], notes))
    try:
        root.mkdir(parents=True, exist_ok=True)
        records.write_json(
            root / "compare.json",
            {
                "a": {"path": str(path_a.resolve()), "source": a.source},
                "b": {"path": str(path_b.resolve()), "source": b.source},
                "ops": [r.to_json() for r in results],
            },
        )
    except OSError as exc:
        raise pytest.UsageError(f"--zl-out {root}: not writable ({exc.strerror})") from None
    _write_and_show(root, [r.to_line() for r in results], tw)
    return 0


def _reaggregate(root: Path, allow: bool, tw: Any) -> int:
    if not root.is_dir():
        raise pytest.UsageError(f"--zl-compare {root}: no such directory")
    op_dirs = sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob("r*_[AB]")))
    if not op_dirs:
        raise pytest.UsageError(
            f"--zl-compare {root}: neither a run directory pair nor an A/B root "
            "(no <op>/r<k>_A directories)"
        )
    results = []
    problems: list[str] = []
    for op_dir in op_dirs:
        result, found = aggregate_op_dir(op_dir, allow=allow, require_done=True)
        problems += found
        results.append((op_dir, result))
    for problem in problems:
        _caliber_line(tw, problem)
    if refusing(problems, allow):
        return _refuse(tw)
    for op_dir, result in results:
        _write_op_result(op_dir, result)
    _write_and_show(root, [r.to_line() for _, r in results], tw)
    failed = any(r.rounds_failed for _, r in results)
    return int(pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK)


def _write_op_result(op_dir: Path, result: screening.OpResult) -> None:
    """``ab.json``, and the plot when matplotlib is installed and the result has a range."""
    from .adapters import plot

    records.write_json(op_dir / "ab.json", result.to_json())
    try:
        plot.write(op_dir / plot.PLOT_FILE, result)
    except Exception as exc:  # a plot is an extra: it never costs a screen its results
        first = (str(exc).splitlines() or [""])[0]
        sys.stderr.write(f"zlbench: {result.op}: no plot ({type(exc).__name__}: {first})\n")


def _write_and_show(root: Path, lines: list[screening.ScreenLine], tw: Any) -> None:
    path = root / SCREEN_FILE
    try:
        root.mkdir(parents=True, exist_ok=True)
        records.write_atomic(path, screening.write_screen(lines))
    except OSError as exc:
        raise pytest.UsageError(f"{path}: not writable ({exc.strerror})") from None
    back = screening.read_screen(path.read_text(encoding="utf-8"), str(path))
    tw.sep("=", "zlbench screen")
    for line in screening.render_screen(back):
        tw.line(line)
    tw.line(f"zlbench: wrote {path}")


# --------------------------------------------------------------------------------------------
# reading one operator's rounds back


def _round_dirs(op_dir: Path) -> Iterator[tuple[int, Path, Path]]:
    k = 1
    while True:
        a, b = op_dir / f"r{k}_A", op_dir / f"r{k}_B"
        if not a.exists() and not b.exists():
            return
        yield k, a, b
        k += 1


def _failure_of(run_dir: Path) -> str | None:
    marker = run_dir / "child.failed"
    if marker.is_file():
        return marker.read_text(encoding="utf-8").strip() or "failed"
    if not run_dir.exists():
        return "not run"
    if not records.is_complete(run_dir):
        return "incomplete run"
    return None


def aggregate_op_dir(
    op_dir: Path,
    notes: Sequence[str] = (),
    *,
    allow: bool = False,
    require_done: bool = False,
) -> tuple[screening.OpResult, list[str]]:
    """Aggregate every round found under ``op_dir``; returns the result and one ``!!! [caliber]``
    line per caliber problem (and a ``[caliber] warning:`` line per caveat, such as a shared
    tuner cache). A round with a problem counts as failed unless ``allow``.
    With ``require_done``, an operator the screen did not finish (no ``op.complete``) fails."""
    rounds: list[screening.RoundInput] = []
    problems: list[str] = []
    extra = list(notes)
    record_dir = op_dir / "record"
    if record_dir.exists():
        cause = _failure_of(record_dir)
        if cause is not None:
            rounds.append(screening.RoundInput(round=0, order="", failed=cause))
    reference: tuple[str, RunIdentity] | None = None
    last = 0
    for k, a_dir, b_dir in _round_dirs(op_dir):
        last = k
        order = "AB" if k % 2 else "BA"
        causes = {"A": _failure_of(a_dir), "B": _failure_of(b_dir)}
        failed = [side for side in order if causes[side]]
        if failed:  # name the side that failed first in this round's order
            side = failed[0]
            rounds.append(
                screening.RoundInput(round=k, order=order, failed=f"{side}: {causes[side]}")
            )
            continue
        try:
            sa = load_side(a_dir, allow_empty=True)
            sb = load_side(b_dir, allow_empty=True)
        except RecordError as exc:
            rounds.append(screening.RoundInput(round=k, order=order, failed=str(exc)))
            continue
        found = caliber_check(sa.identity, sb.identity, f"r{k}_A", f"r{k}_B")
        if reference is None:
            reference = (f"r{k}_A", sa.identity)
        else:
            found += [
                p
                for p in caliber_check(reference[1], sa.identity, reference[0], f"r{k}_A")
                if p.fatal
            ]
        for p in found:
            if not p.fatal:
                note = f"caliber warning: {p.field}"
                if note not in extra:
                    extra.append(note)
                    problems.append(f"{p.line()} ({op_dir.name})")
        fatal = [p for p in found if p.fatal]
        if fatal:
            problems += [f"{p.line()} ({op_dir.name})" for p in fatal]
            fields = ", ".join(dict.fromkeys(p.field for p in fatal))
            if not allow:
                rounds.append(
                    screening.RoundInput(round=k, order=order, failed=f"caliber: {fields}")
                )
                continue
            extra.append(f"round {k}: caliber mismatch allowed: {fields}")
        rounds.append(
            screening.RoundInput(
                round=k,
                order=order,
                rows_a=sa.rows,
                rows_b=sb.rows,
                ir_a=sa.ir,
                ir_b=sb.ir,
                identity_a=sa.identity,
                identity_b=sb.identity,
            )
        )
    notes_file = op_dir / NOTES_FILE
    if notes_file.is_file():
        extra += [n for n in notes_file.read_text(encoding="utf-8").splitlines() if n.strip()]
    skipped = op_dir / "skipped.txt"
    if skipped.is_file():
        extra.append(skipped.read_text(encoding="utf-8").strip())
    if require_done and not (op_dir / OP_DONE).is_file():
        rounds.append(
            screening.RoundInput(
                round=last + 1,
                order="",
                failed=f"the screen did not finish this operator (no {OP_DONE})",
            )
        )
    return screening.aggregate(op_dir.name, rounds, extra), problems


# --------------------------------------------------------------------------------------------
# the A/B controller


def _replay_root(config: pytest.Config) -> Path | None:
    value = _common.raw(config, "zl_replay_from")
    if value is None:
        return None
    path = Path(str(value)).resolve()
    if not (path / "flaggems_cache").is_dir():
        raise pytest.UsageError(f"--zl-replay-from {path}: holds no flaggems_cache/ to replay")
    return path


def _abs_nodeid(item: pytest.Item) -> str:
    nodeid = item.nodeid
    rest = nodeid[nodeid.index("::") :] if "::" in nodeid else ""
    return f"{item.path}{rest}"


def _option_name(arg: str) -> str | None:
    """The option an argument spells, for the options we filter; None for anything else."""
    name = arg.split("=", 1)[0]
    if name in OWN_OPTIONS:
        return name
    if arg.startswith("-n") and not arg.startswith("--") and len(arg) > 2:
        return "-n="  # -n4, -nauto: the value is attached
    return None


def passthrough_args(args: Sequence[str], positional: Sequence[str]) -> list[str]:
    """The user's options minus ours, xdist's and the parent-only ones, and minus test paths."""
    out: list[str] = []
    skip_next = False
    pos = set(positional)
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        name = _option_name(arg)
        if name == "-n=":
            continue
        if name is not None:
            skip_next = OWN_OPTIONS[name] and "=" not in arg
            continue
        if arg in pos:
            continue
        out.append(arg)
    return out


def dtypes_args(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """``args`` without FlagGems' ``--dtypes`` options, and the dtypes those options named."""
    out: list[str] = []
    dtypes: list[str] = []
    take_next = False
    for arg in args:
        if take_next:
            take_next = False
            dtypes.append(arg)
        elif arg == "--dtypes":
            take_next = True
        elif arg.startswith("--dtypes="):
            dtypes.append(arg.split("=", 1)[1])
        else:
            out.append(arg)
    return out, dtypes


def same_failure(first: str, second: str) -> bool:
    """Whether two causes are the same failure: the same exit status and last error line, up to
    the durations pytest prints."""
    return _DURATION.sub("<t>", first) == _DURATION.sub("<t>", second)


def dtype_refusal(out_path: Path) -> bool:
    """Whether a child's output shows FlagGems refusing the requested ``--dtypes``."""
    try:
        text = out_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return _DTYPE_REFUSAL.search(text) is not None


class _DtypeFallback(Exception):
    """An operator refused the requested ``--dtypes``: measure it again on its own dtypes."""


class OpItem(pytest.Item):
    """One operator of the screen: runs every side of every round as child processes."""

    def __init__(self, *, op: str, nodeids: list[str], controller: AbController, **kw: Any):
        super().__init__(**kw)
        self.op = op
        self.nodeids = nodeids
        self.controller = controller
        self.caliber_lines: list[str] = []
        self.add_marker(pytest.mark.xdist_group(op))

    def runtest(self) -> None:
        result = self.controller.run_op(self)
        self.user_properties.append(("zl_screen", result.to_line().to_json()))
        if self.caliber_lines:
            self.user_properties.append(("zl_caliber", list(self.caliber_lines)))
        if result.rounds_failed:
            raise OpFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, OpFailed):
            return "\n".join(excinfo.value.result.notes)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"zlbench A/B {self.op}"


class _Deterministic(Exception):
    """A child run failed the same way on its retry."""


class OpFailed(Exception):
    def __init__(self, result: screening.OpResult) -> None:
        super().__init__(result.op)
        self.result = result


class AbController:
    def __init__(self, config: pytest.Config, settings: AbSettings) -> None:
        self.config = config
        self.settings = settings
        self.lines: dict[str, screening.ScreenLine] = {}
        self.caliber: dict[str, None] = {}  # every caliber line of every operator, in order
        self.started = time.monotonic()
        self.where = _common.worker_id(config) if _common.is_worker(config) else ""
        #: operators measured without the user's --dtypes (they refused them)
        self.own_dtypes: set[str] = set()

    # ---- collection ------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        groups: dict[str, list[pytest.Item]] = {}
        for item in items:
            op = op_id(item)
            if not _OP_ID.match(op):
                raise pytest.UsageError(
                    f"{item.nodeid}: operator id {op!r} cannot name a directory of the screen"
                )
            groups.setdefault(op, []).append(item)
        from .core.compat import dismissed

        new_items: list[pytest.Item] = []
        for op, members in groups.items():
            first_file = members[0].nodeid.split("::", 1)[0]
            item = OpItem.from_parent(
                session,
                name=f"zlbench[{op}]",
                nodeid=f"{first_file}::zlbench[{op}]",
                op=op,
                nodeids=[_abs_nodeid(m) for m in members],
                controller=self,
                path=members[0].path,
            )
            try:
                reason = dismissed(op)
            except ValueError as exc:
                raise pytest.UsageError(f"ops/dismiss.yaml: {exc}") from None
            if reason is not None:  # ops/dismiss.yaml: verified not measurable here
                item.add_marker(pytest.mark.skip(reason=f"dismissed (ops/dismiss.yaml): {reason}"))
            new_items.append(item)
        items[:] = new_items

    # ---- running one operator --------------------------------------------------------------

    def progress(self, text: str, terminal: bool = True) -> None:
        elapsed = time.monotonic() - self.started
        where = f" {self.where}" if self.where else ""
        line = f"[zlbench{where} {elapsed:7.1f}s] {text}"
        root = self.settings.root
        with open(root / "progress.log", "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
        if not terminal:
            return
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if reporter is None or _common.is_worker(self.config) or self.config.get_verbosity() < 0:
            return
        if self.config.pluginmanager.has_plugin("dsession"):
            reporter.write("\n")  # xdist's progress characters do not end their line
        capman = self.config.pluginmanager.getplugin("capturemanager")
        if capman is None:
            reporter.write_line(line)
            return
        with capman.global_and_fixture_disabled():  # runtest output is captured otherwise
            reporter.write_line(line)

    def child_env(self, side: str, rnd: int, op: str | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
        for var in self.settings.env_b:
            env.pop(var, None)
        if side == "B":
            env.update(self.settings.env_b)
        addopts = env.get("PYTEST_ADDOPTS")
        if addopts:
            try:
                passed = passthrough_args(shlex.split(addopts), ())
                if op in self.own_dtypes:
                    passed, _ = dtypes_args(passed)
                env["PYTEST_ADDOPTS"] = shlex.join(passed)
            except ValueError:
                pass  # pytest itself reports a malformed PYTEST_ADDOPTS
        env["ZLBENCH_SIDE"] = side
        env["ZLBENCH_ROUND"] = str(rnd)
        env["ZLBENCH_SWITCH"] = json.dumps(self.settings.env_b if side == "B" else {})
        env[CHILD_ENV] = "1"
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def child_cmd(self, item: OpItem, run_dir: Path, replay: Path | None) -> list[str]:
        inv = self.config.invocation_params
        cmd = [sys.executable, "-m", "pytest", *item.nodeids]
        passed = passthrough_args(inv.args, self.config.args)
        if item.op in self.own_dtypes:
            passed, _ = dtypes_args(passed)
        cmd += passed
        cmd += [
            f"--zl-out={run_dir}",
            f"--zl-backend={self.settings.backend}",
            "-p",
            "no:cacheprovider",
        ]
        if self.config.pluginmanager.hasplugin("xdist"):
            cmd += ["-n", "0"]  # wins over an -n in the ini's addopts: a child is one process
        for name in CHILD_INI_RESET:
            cmd += ["-o", f"{name}="]
        if replay is not None:
            cmd.append(f"--zl-replay-from={replay}")
        else:
            cmd += ["-o", "zl_replay_from="]
        return cmd

    def run_child(
        self, item: OpItem, run_dir: Path, side: str, rnd: int, replay: Path | None
    ) -> str | None:
        """Run one side in its own process group; returns None on success or a one-line cause.
        Whatever the child leaves running in its group is killed when it ends."""
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        out_path = run_dir.parent / f"{run_dir.name}.out"
        cmd = self.child_cmd(item, run_dir, replay)
        t0 = time.monotonic()
        cause = None
        rc: int | None = None
        with open(out_path, "w", encoding="utf-8") as out:
            out.write("$ " + shlex.join(cmd) + "\n")
            out.flush()
            proc = subprocess.Popen(
                cmd,
                cwd=self.config.invocation_params.dir,
                env=self.child_env(side, rnd, item.op),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=lifeline.preexec(),  # dies with this process (kill -9 of the screen)
            )
            try:
                rc = proc.wait(timeout=self.settings.timeout)
            except subprocess.TimeoutExpired:
                cause = f"timed out after {self.settings.timeout:g}s (process group killed)"
            finally:
                _kill_group(proc)  # a timeout, an interrupt, or grandchildren left behind
        if cause is None:
            if rc is not None and rc < 0:
                cause = f"killed by signal {_signal_name(-rc)}"
            elif rc != 0:
                meaning = _EXIT_MEANING.get(rc) if rc is not None else None
                what = f"exit status {rc}" + (f" ({meaning})" if meaning else "")
                cause = f"{what}: {_last_error(out_path)}"
            elif not records.is_complete(run_dir):
                cause = "child finished without a complete run directory"
        elapsed = time.monotonic() - t0
        label = "record" if side == "record" else f"r{rnd} {side}"
        self.progress(f"{item.op} {label}: {'ok' if cause is None else cause} ({elapsed:.1f}s)")
        if cause is not None:
            run_dir.mkdir(parents=True, exist_ok=True)
            records.write_atomic(run_dir / "child.failed", cause + "\n")
        return cause

    def run_side(
        self, item: OpItem, run_dir: Path, side: str, rnd: int, replay: Path | None
    ) -> str | None:
        """:meth:`run_child`, retried once when it fails. A retry that fails the same way (same
        exit status and last error line) marks the failure deterministic; a retry that passes
        is noted. A refusal of the requested ``--dtypes`` is not retried: it raises
        :class:`_DtypeFallback` so the operator is measured on its own dtypes."""
        cause = self.run_child(item, run_dir, side, rnd, replay)
        if cause is None:
            return None
        out_path = run_dir.parent / f"{run_dir.name}.out"
        if item.op not in self.own_dtypes and dtype_refusal(out_path):
            dtypes = self.requested_dtypes()
            if dtypes:
                raise _DtypeFallback(",".join(dtypes))
        label = "the recording pass" if side == "record" else f"side {side} of round {rnd}"
        first_out = run_dir.parent / f"{run_dir.name}.try1.out"
        shutil.copyfile(out_path, first_out)
        self.progress(f"{item.op}: {label} failed; retrying it once")
        again = self.run_child(item, run_dir, side, rnd, replay)
        if again is None:
            self.note(item, f"{label} failed once ({cause}) and passed on retry")
            return None
        if same_failure(cause, again):
            raise _Deterministic(repeated_failure(label, again))
        return again

    def requested_dtypes(self) -> list[str]:
        """The ``--dtypes`` the children are given: on the command line or in PYTEST_ADDOPTS."""
        args = list(self.config.invocation_params.args)
        try:
            args += shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
        except ValueError:
            pass
        _, dtypes = dtypes_args(passthrough_args(args, ()))
        return dtypes

    def note(self, item: OpItem, text: str) -> None:
        path = self.settings.root / item.op / NOTES_FILE
        before = path.read_text(encoding="utf-8") if path.is_file() else ""
        records.write_atomic(path, before + text + "\n")

    def run_op(self, item: OpItem) -> screening.OpResult:
        s = self.settings
        op_dir = s.root / item.op
        done = op_dir / OP_DONE
        if s.resume and done.is_file():
            self.progress(f"{item.op}: complete, reused (--zl-resume)")
            result, item.caliber_lines = aggregate_op_dir(op_dir, allow=s.allow_caliber_mismatch)
            return result
        if op_dir.exists():  # an operator an interrupted screen left unfinished
            self.progress(f"{item.op}: incomplete, measured again (--zl-resume)")
            shutil.rmtree(op_dir)
        op_dir.mkdir(parents=True)
        try:
            self._measure(item, op_dir)
        except _DtypeFallback as exc:
            requested = str(exc)
            self.progress(
                f"{item.op}: --dtypes {requested} not supported; measured again on its own dtypes"
            )
            shutil.rmtree(op_dir)
            op_dir.mkdir(parents=True)
            self.own_dtypes.add(item.op)
            self.note(
                item, f"--dtypes {requested} not supported by {item.op}; measured its own dtypes"
            )
            self._measure(item, op_dir)
        result, problems = aggregate_op_dir(op_dir, allow=s.allow_caliber_mismatch)
        _write_op_result(op_dir, result)
        item.caliber_lines = problems  # the controller prints them and sets the exit status
        for problem in problems:
            self.progress(problem, terminal=False)
        records.write_atomic(op_dir / OP_DONE, "")
        return result

    def _measure(self, item: OpItem, op_dir: Path) -> None:
        try:
            self._measure_rounds(item, op_dir)
        except _Deterministic as exc:  # its text: core.parsing.repeated_failure
            self.progress(f"{item.op}: {exc}")
            self.note(item, str(exc))

    def _measure_rounds(self, item: OpItem, op_dir: Path) -> None:
        s = self.settings
        replay = s.replay_from
        if replay is not None:
            self.progress(f"{item.op}: every side replays {replay} (no recording pass)")
        elif s.backend != "cpu":
            rec_dir = op_dir / "record"
            if self.run_side(item, rec_dir, "record", 0, None) is not None:
                # each side would tune its own configs: the delta would mix tuning and switch
                self.progress(f"{item.op}: recording pass failed; no side measured")
                return
            replay = rec_dir
        previous: str | None = None  # the cause the last failed round failed with
        for k in range(1, s.rounds + 1):
            order = ("A", "B") if k % 2 else ("B", "A")
            failure = None
            for side in order:
                cause = self.run_side(item, op_dir / f"r{k}_{side}", side, k, replay)
                if cause is not None:
                    failure = cause  # the round is lost: its other side is not run
                    break
            if failure is not None:
                if previous is not None and same_failure(failure, previous):
                    self.progress(
                        f"{item.op}: round {k} failed as round {k - 1} did; not retried again"
                    )
                    return
                previous = failure
                continue
            if k == 1 and s.rounds > 1 and not s.allow_no_ir_diff and s.switches:
                first, _ = aggregate_op_dir(op_dir, allow=s.allow_caliber_mismatch)
                # Only identical IR says the switch did nothing to this operator. NO_TRITON says
                # nothing about the switch (it may act on aten or a vendor library), so every
                # round is measured.
                if first.verdict == screening.NO_IR_DIFF:
                    why = "identical IR on both sides"
                    records.write_atomic(
                        op_dir / "skipped.txt",
                        f"{screening.SKIP_NOTE}: {why}; rounds 2..{s.rounds} skipped "
                        "(--zl-allow-no-ir-diff measures them)\n",
                    )
                    self.progress(f"{item.op}: {screening.SKIP_NOTE}, rounds 2..{s.rounds} skipped")
                    return

    # ---- reporting (controller only) ---------------------------------------------------------

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == "zl_screen" and isinstance(value, dict):
                line = screening.ScreenLine.from_json(value)
                self.lines[line.op] = line
                if self.config.pluginmanager.has_plugin("dsession"):
                    # the one line per operator a controller shows under xdist, whose
                    # workers' per-round lines go to progress.log only
                    verdict = f"{line.verdict} {line.range}".strip()
                    self.progress(f"{line.op}: {verdict}; rows {line.rows or 0}")
            elif name == "zl_caliber" and isinstance(value, list):
                self.caliber.update(dict.fromkeys(map(str, value)))

    def refused(self) -> bool:
        """SPEC §5 inside a screen: a caliber mismatch between the runs of an operator (its
        round already counts as failed) makes the screen's exit status 4, unless allowed."""
        return refusing(self.caliber, self.settings.allow_caliber_mismatch)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if _common.is_worker(self.config):
            return
        if self.refused():
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if not self.lines:
            return
        path = self.settings.root / SCREEN_FILE
        records.write_atomic(path, screening.write_screen(self.lines.values()))
        self.progress(f"wrote {path} ({len(self.lines)} operators)", terminal=False)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if _common.is_worker(self.config):
            return
        path = self.settings.root / SCREEN_FILE
        terminalreporter.write_sep("=", "zlbench screen")
        for text in self.caliber:
            _caliber_line(terminalreporter, text)
        if self.refused():
            terminalreporter.write_line(
                f"{CALIBER_PREFIX} those rounds count as failed and have no range; "
                "--zl-allow-caliber-mismatch measures them anyway",
                red=True,
            )
        if not self.lines or not path.is_file():
            terminalreporter.write_line("no operator was screened")
            return
        back = screening.read_screen(path.read_text(encoding="utf-8"), str(path))
        for line in screening.render_screen(back):
            terminalreporter.write_line(line)
        switch = (
            " ".join(f"{k}={v}" for k, v in self.settings.env_b.items()) or "none (A/A control)"
        )
        terminalreporter.write_line(
            f"zlbench: switch on side B: {switch}; rounds={self.settings.rounds}"
        )
        terminalreporter.write_line(f"zlbench: wrote {path}")

    @pytest.hookimpl
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        switch = " ".join(f"{k}={v}" for k, v in self.settings.env_b.items()) or "A/A control"
        return [f"zlbench A/B: {switch}, rounds={self.settings.rounds}, root={self.settings.root}"]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _last_error(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "no output"
    for line in reversed(lines):
        text = line.strip()
        if text.startswith(("E ", "ERROR", "FAILED", "Error", "RuntimeError", "Fatal")):
            return text[:200]
    for line in reversed(lines):
        if line.strip():
            return line.strip()[:200]
    return "no output"


def _check_addopts(config: pytest.Config) -> None:
    """The ini's addopts reach every child: screening options there would screen again."""
    try:
        addopts = config.getini("addopts")
    except (ValueError, KeyError):
        return
    for arg in addopts or ():
        name = str(arg).split("=", 1)[0]
        if name in ("--zl-ab", "--zl-rounds", "--zl-compare"):
            raise pytest.UsageError(
                f"{name} is in the ini file's addopts, which every child run inherits: give it "
                "on the command line"
            )


def _check_resume(root: Path, settings: AbSettings) -> None:
    path = root / SETTINGS_FILE
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"--zl-resume: {path} is unreadable ({exc})") from None
    now = settings.describe()
    differ = [k for k in now if isinstance(before, dict) and before.get(k) != now[k]]
    if not isinstance(before, dict) or differ:
        what = ", ".join(f"{k}: {before.get(k)!r} -> {now[k]!r}" for k in differ)
        raise pytest.UsageError(
            f"--zl-resume: {root} was screened with other settings ({what or 'unknown'}); "
            "give a new --zl-out"
        )


def start_controller(config: pytest.Config) -> None:
    if os.environ.get(CHILD_ENV) and not _common.is_worker(config):
        raise pytest.UsageError(
            "this is a child run of an A/B screen and cannot screen again: --zl-ab/--zl-rounds "
            "reached it through PYTEST_ADDOPTS or the ini file"
        )
    no_switch: list[Switch] = []
    switches = tuple(
        _common.get(config, "zl_ab", lambda v: [parse_switch(s) for s in v], no_switch)
    )
    rounds = _common.get(config, "zl_rounds", lambda v: parse_positive_int(v, "--zl-rounds"), 1)
    timeout = _common.get(
        config, "zl_timeout", lambda v: parse_positive_float(v, "--zl-timeout"), None
    )
    _check_addopts(config)
    from .plugins.device import backend_of

    backend = backend_of(config)
    try:
        env_b = switches_env(switches, backend.flagtree_prefix)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    out = _common.raw(config, "zl_out")
    root = Path(str(out)) if out else _default_root()
    resume = _common.get(config, "zl_resume", parse_bool, False)
    settings = AbSettings(
        root=root.resolve(),
        switches=switches,
        env_b=env_b,
        rounds=rounds,
        allow_no_ir_diff=_common.get(config, "zl_allow_no_ir_diff", parse_bool, False),
        timeout=timeout,
        resume=resume,
        backend=backend.name,
        flagtree_prefix=backend.flagtree_prefix,
        replay_from=_replay_root(config),
        allow_caliber_mismatch=_common.get(config, "zl_allow_caliber_mismatch", parse_bool, False),
    )
    if not _common.is_worker(config):
        from .claim import SCREEN, claiming

        with claiming(config, SCREEN, root, resume=resume):  # lock, kind, emptiness
            if resume:
                _check_resume(root, settings)
            try:
                records.write_json(root / SETTINGS_FILE, settings.describe())
            except OSError as exc:
                raise pytest.UsageError(f"--zl-out {root}: not writable ({exc.strerror})") from None
    controller = AbController(config, settings)
    config.stash[ab_controller_key] = controller
    config.pluginmanager.register(controller, "zlbench-ab-controller")
