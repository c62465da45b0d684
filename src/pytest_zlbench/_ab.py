"""The A/B screen's machinery: operator items, child runs, aggregation and ``--zl-compare``.

Imported only when ``--zl-ab``, ``--zl-rounds`` or ``--zl-compare`` is given, so an installed but
inactive ``zlbench.ab`` costs no more than its option definitions.
"""

from __future__ import annotations

import json
import os
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

from . import _opts, _xdist
from ._stash import ab_controller_key
from .core import records, screening
from .core.caliber import check as caliber_check
from .core.parsing import (
    Switch,
    parse_bool,
    parse_positive_float,
    parse_positive_int,
    parse_switch,
    switches_env,
)
from .core.records import RecordError
from .core.rundir import Side, load_side

#: marks that are never an operator id (FlagGems' BUILTIN_MARKS, plus ours and xdist's)
BUILTIN_MARKS = frozenset(
    {
        "parametrize",
        "skip",
        "skipif",
        "xfail",
        "usefixtures",
        "filterwarnings",
        "timeout",
        "tryfirst",
        "trylast",
        "xdist_group",
        "zl_op",
    }
)
#: our options that never pass through to a child (with whether they take a value)
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
    "-n": True,
    "--numprocesses": True,
    "--dist": True,
    "--tx": True,
    "--maxprocesses": True,
    "--max-worker-restart": True,
    "--zl-backend": True,
}
OP_DONE = "op.complete"


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


def _default_root() -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path("runs") / f"zl_{stamp}"


def _ab_requested(config: pytest.Config) -> bool:
    return _opts.raw(config, "zl_ab") is not None or _opts.raw(config, "zl_rounds") is not None


def run_compare(config: pytest.Config) -> int | None:
    paths = _opts.raw(config, "zl_compare")
    if not paths:
        return None
    if _ab_requested(config):
        raise pytest.UsageError(
            "--zl-compare runs no tests: it cannot be combined with --zl-ab/--zl-rounds"
        )
    allow = _opts.get(config, "zl_allow_caliber_mismatch", parse_bool, False)
    out = _opts.raw(config, "zl_out")
    tw = config.get_terminal_writer()
    if len(paths) == 1:
        return _reaggregate(Path(paths[0]), allow, tw)
    if len(paths) != 2:
        raise pytest.UsageError(
            f"--zl-compare takes one A/B root or two run directories, got {len(paths)}"
        )
    root = Path(str(out)) if out else _default_root()
    return _compare_two(Path(paths[0]), Path(paths[1]), root, allow, tw)


def _compare_two(path_a: Path, path_b: Path, root: Path, allow: bool, tw: Any) -> int:
    sides: list[Side] = []
    failed = False
    for label, path in (("A", path_a), ("B", path_b)):
        try:
            sides.append(load_side(path))
        except RecordError as exc:
            tw.line(f"!!! [caliber] {label}: {exc}", red=True)
            failed = True
    if failed:
        return int(pytest.ExitCode.USAGE_ERROR)
    a, b = sides
    problems = caliber_check(a.identity, b.identity, str(path_a), str(path_b))
    for problem in problems:
        tw.line(problem.line(), red=problem.fatal, yellow=not problem.fatal)
    if any(p.fatal for p in problems) and not allow:
        tw.line(
            "!!! [caliber] refusing to compare; --zl-allow-caliber-mismatch overrides", red=True
        )
        return int(pytest.ExitCode.USAGE_ERROR)
    ops = sorted({r.op for r in a.rows} | {r.op for r in b.rows})
    lines = []
    notes = [f"caliber mismatch allowed: {p.field}" for p in problems if p.fatal]
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
        lines.append(screening.aggregate(op, [rnd], notes).to_line())
    _write_and_show(root, lines, tw)
    return 0


def _reaggregate(root: Path, allow: bool, tw: Any) -> int:
    if not root.is_dir():
        raise pytest.UsageError(f"--zl-compare {root}: no such directory")
    op_dirs = sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob("r*_A")))
    if not op_dirs:
        raise pytest.UsageError(
            f"--zl-compare {root}: not an A/B root (no <op>/r<k>_A directories)"
        )
    lines = []
    refused = False
    for op_dir in op_dirs:
        result, problems = aggregate_op_dir(op_dir)
        for problem in problems:
            tw.line(problem, red=True)
        if problems and not allow:
            refused = True
            continue
        lines.append(result.to_line())
    if refused:
        return int(pytest.ExitCode.USAGE_ERROR)
    _write_and_show(root, lines, tw)
    return 0


def _write_and_show(root: Path, lines: list[screening.ScreenLine], tw: Any) -> None:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "screen.tsv"
    records.write_atomic(path, screening.write_screen(lines))
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
    if not records.is_complete(run_dir):
        return "incomplete run"
    return None


def aggregate_op_dir(
    op_dir: Path, notes: Sequence[str] = ()
) -> tuple[screening.OpResult, list[str]]:
    """Aggregate every round found under ``op_dir``; returns the result and caliber problems."""
    rounds = []
    problems: list[str] = []
    for k, a_dir, b_dir in _round_dirs(op_dir):
        order = "AB" if k % 2 else "BA"
        cause = _failure_of(a_dir) or _failure_of(b_dir)
        if cause:
            side = "A" if _failure_of(a_dir) else "B"
            rounds.append(screening.RoundInput(round=k, order=order, failed=f"{side}: {cause}"))
            continue
        try:
            sa, sb = load_side(a_dir), load_side(b_dir)
        except RecordError as exc:
            rounds.append(screening.RoundInput(round=k, order=order, failed=str(exc)))
            continue
        for p in caliber_check(sa.identity, sb.identity, f"r{k}_A", f"r{k}_B"):
            if p.fatal:
                problems.append(f"{p.line()} ({op_dir.name})")
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
    extra = list(notes)
    skipped = op_dir / "skipped.txt"
    if skipped.is_file():
        extra.append(skipped.read_text(encoding="utf-8").strip())
    return screening.aggregate(op_dir.name, rounds, extra), problems


# --------------------------------------------------------------------------------------------
# the A/B controller


def _replay_root(config: pytest.Config) -> Path | None:
    value = _opts.raw(config, "zl_replay_from")
    if value is None:
        return None
    path = Path(str(value)).resolve()
    if not (path / "flaggems_cache").is_dir():
        raise pytest.UsageError(f"--zl-replay-from {path}: holds no flaggems_cache/ to replay")
    return path


def op_id(item: pytest.Item) -> str:
    """FlagGems' operator id: the first custom mark; otherwise the module's name."""
    for mark in item.iter_markers():
        if mark.name == "zl_op" and mark.args:
            return str(mark.args[0])
    for mark in item.iter_markers():
        if mark.name not in BUILTIN_MARKS:
            return mark.name
    module = getattr(item, "module", None)
    name = getattr(module, "__name__", None) or item.path.stem
    return str(name).rsplit(".", 1)[-1].removeprefix("test_")


def _abs_nodeid(item: pytest.Item) -> str:
    nodeid = item.nodeid
    rest = nodeid[nodeid.index("::") :] if "::" in nodeid else ""
    return f"{item.path}{rest}"


def passthrough_args(args: Sequence[str], positional: Sequence[str]) -> list[str]:
    """The user's options minus ours and xdist's, and minus the test paths."""
    out: list[str] = []
    skip_next = False
    pos = set(positional)
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        name = arg.split("=", 1)[0]
        if name in OWN_OPTIONS:
            skip_next = OWN_OPTIONS[name] and "=" not in arg
            continue
        if name.startswith("-n") and name[2:].isdigit():
            continue
        if arg in pos:
            continue
        out.append(arg)
    return out


class OpItem(pytest.Item):
    """One operator of the screen: runs every side of every round as child processes."""

    def __init__(self, *, op: str, nodeids: list[str], controller: AbController, **kw: Any):
        super().__init__(**kw)
        self.op = op
        self.nodeids = nodeids
        self.controller = controller
        self.add_marker(pytest.mark.xdist_group(op))

    def runtest(self) -> None:
        result = self.controller.run_op(self)
        self.user_properties.append(("zl_screen", result.to_line().to_json()))
        if result.rounds_failed:
            raise OpFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, OpFailed):
            return "\n".join(excinfo.value.result.notes)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"zlbench A/B {self.op}"


class OpFailed(Exception):
    def __init__(self, result: screening.OpResult) -> None:
        super().__init__(result.op)
        self.result = result


class AbController:
    def __init__(self, config: pytest.Config, settings: AbSettings) -> None:
        self.config = config
        self.settings = settings
        self.lines: dict[str, screening.ScreenLine] = {}
        self.started = time.monotonic()

    # ---- collection ------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        groups: dict[str, list[pytest.Item]] = {}
        for item in items:
            groups.setdefault(op_id(item), []).append(item)
        new_items: list[pytest.Item] = []
        for op, members in groups.items():
            new_items.append(
                OpItem.from_parent(
                    session,
                    name=f"zlbench[{op}]",
                    op=op,
                    nodeids=[_abs_nodeid(m) for m in members],
                    controller=self,
                    path=members[0].path,
                )
            )
        items[:] = new_items

    # ---- running one operator --------------------------------------------------------------

    def progress(self, text: str) -> None:
        elapsed = time.monotonic() - self.started
        line = f"[zlbench {elapsed:7.1f}s] {text}"
        root = self.settings.root
        with open(root / "progress.log", "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if reporter is None or _xdist.is_worker(self.config) or self.config.get_verbosity() < 0:
            return
        capman = self.config.pluginmanager.getplugin("capturemanager")
        if capman is None:
            reporter.write_line(line)
            return
        with capman.global_and_fixture_disabled():  # runtest output is captured otherwise
            reporter.write_line(line)

    def child_env(self, side: str, rnd: int) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
        for var in self.settings.env_b:
            env.pop(var, None)
        if side == "B":
            env.update(self.settings.env_b)
        env["ZLBENCH_SIDE"] = side
        env["ZLBENCH_ROUND"] = str(rnd)
        env["ZLBENCH_SWITCH"] = json.dumps(self.settings.env_b if side == "B" else {})
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def child_cmd(self, item: OpItem, run_dir: Path, replay: Path | None) -> list[str]:
        inv = self.config.invocation_params
        cmd = [sys.executable, "-m", "pytest", *item.nodeids]
        cmd += passthrough_args(inv.args, self.config.args)
        cmd += [
            f"--zl-out={run_dir}",
            f"--zl-backend={self.settings.backend}",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
        ]
        if replay is not None:
            cmd.append(f"--zl-replay-from={replay}")
        return cmd

    def run_child(
        self, item: OpItem, run_dir: Path, side: str, rnd: int, replay: Path | None
    ) -> str | None:
        """Run one side; returns None on success or a one-line cause."""
        if run_dir.exists():
            if (
                self.settings.resume
                and records.is_complete(run_dir)
                and not (run_dir / "child.failed").exists()
            ):
                self.progress(f"{item.op} r{rnd} {side}: complete, reused (--zl-resume)")
                return None
            shutil.rmtree(run_dir)
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        out_path = run_dir.parent / f"{run_dir.name}.out"
        cmd = self.child_cmd(item, run_dir, replay)
        t0 = time.monotonic()
        cause = None
        with open(out_path, "w", encoding="utf-8") as out:
            out.write("$ " + " ".join(cmd) + "\n")
            out.flush()
            proc = subprocess.Popen(
                cmd,
                cwd=self.config.invocation_params.dir,
                env=self.child_env(side, rnd),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:
                rc = proc.wait(timeout=self.settings.timeout)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                rc = None
                cause = f"timed out after {self.settings.timeout:g}s (process group killed)"
            except BaseException:
                _kill_group(proc)
                raise
        if cause is None:
            if rc is not None and rc < 0:
                cause = f"killed by signal {signal.Signals(-rc).name}"
            elif rc not in (0,):
                cause = f"exit status {rc}: {_last_error(out_path)}"
            elif not records.is_complete(run_dir):
                cause = "child finished without a complete run directory"
        elapsed = time.monotonic() - t0
        self.progress(
            f"{item.op} r{rnd} {side}: {'ok' if cause is None else cause} ({elapsed:.1f}s)"
        )
        if cause is not None:
            run_dir.mkdir(parents=True, exist_ok=True)
            records.write_atomic(run_dir / "child.failed", cause + "\n")
        return cause

    def run_op(self, item: OpItem) -> screening.OpResult:
        s = self.settings
        op_dir = s.root / item.op
        done = op_dir / OP_DONE
        if s.resume and done.is_file():
            self.progress(f"{item.op}: complete, reused (--zl-resume)")
            result, _ = aggregate_op_dir(op_dir)
            return result
        op_dir.mkdir(parents=True, exist_ok=True)
        for stale in ("skipped.txt", OP_DONE):
            (op_dir / stale).unlink(missing_ok=True)
        replay = s.replay_from
        if replay is not None:
            self.progress(f"{item.op}: every side replays {replay} (no recording pass)")
        elif s.backend != "cpu":
            rec_dir = op_dir / "record"
            cause = self.run_child(item, rec_dir, "record", 0, None)
            if cause is None:
                replay = rec_dir
            else:
                self.progress(
                    f"{item.op}: recording pass failed ({cause}); sides tune on their own"
                )
        for k in range(1, s.rounds + 1):
            order = ("A", "B") if k % 2 else ("B", "A")
            for side in order:
                self.run_child(item, op_dir / f"r{k}_{side}", side, k, replay)
            if k == 1 and s.rounds > 1 and not s.allow_no_ir_diff:
                first, _ = aggregate_op_dir(op_dir)
                if first.verdict in (screening.NO_IR_DIFF, screening.NO_TRITON) and s.switches:
                    records.write_atomic(
                        op_dir / "skipped.txt",
                        f"{screening.SKIP_NOTE}: rounds 2..{s.rounds} skipped\n",
                    )
                    break
        result, problems = aggregate_op_dir(op_dir)
        records.write_json(op_dir / "ab.json", result.to_json())
        if problems:
            self.progress(f"{item.op}: " + "; ".join(problems))
        records.write_atomic(op_dir / OP_DONE, "")
        return result

    # ---- reporting (controller only) ---------------------------------------------------------

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
            return
        for name, value in report.user_properties:
            if name == "zl_screen" and isinstance(value, dict):
                line = screening.ScreenLine.from_json(value)
                self.lines[line.op] = line

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if _xdist.is_worker(self.config) or not self.lines:
            return
        path = self.settings.root / "screen.tsv"
        records.write_atomic(path, screening.write_screen(self.lines.values()))

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if _xdist.is_worker(self.config):
            return
        path = self.settings.root / "screen.tsv"
        terminalreporter.write_sep("=", "zlbench screen")
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


def start_controller(config: pytest.Config) -> None:
    no_switch: list[Switch] = []
    switches = tuple(_opts.get(config, "zl_ab", lambda v: [parse_switch(s) for s in v], no_switch))
    rounds = _opts.get(config, "zl_rounds", lambda v: parse_positive_int(v, "--zl-rounds"), 1)
    timeout = _opts.get(
        config, "zl_timeout", lambda v: parse_positive_float(v, "--zl-timeout"), None
    )
    from .plugins.device import backend_of

    backend = backend_of(config)
    try:
        env_b = switches_env(switches, backend.flagtree_prefix)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    out = _opts.raw(config, "zl_out")
    root = Path(str(out)) if out else _default_root()
    resume = _opts.get(config, "zl_resume", parse_bool, False)
    if not _xdist.is_worker(config):
        if root.exists() and any(root.iterdir()) and not resume:
            raise pytest.UsageError(
                f"--zl-out {root}: already holds results; pass --zl-resume to continue it or "
                "give a new directory"
            )
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise pytest.UsageError(f"--zl-out {root}: not writable ({exc.strerror})") from None
    settings = AbSettings(
        root=root.resolve(),
        switches=switches,
        env_b=env_b,
        rounds=rounds,
        allow_no_ir_diff=_opts.get(config, "zl_allow_no_ir_diff", parse_bool, False),
        timeout=timeout,
        resume=resume,
        backend=backend.name,
        flagtree_prefix=backend.flagtree_prefix,
        replay_from=_replay_root(config),
    )
    controller = AbController(config, settings)
    config.stash[ab_controller_key] = controller
    config.pluginmanager.register(controller, "zlbench-ab-controller")
