"""The collection-time work of ``zlbench.compat`` (skip overrides, the stale-override report,
``--zl-inventory``): imported only when that plugin has something to do, so that an installed
but inactive plugin costs a pytest session little."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .. import _common
from .._common import op_id
from .marks import bench_dir_of, condition_true, mark_reason, still_skips

if TYPE_CHECKING:
    from ..core.backends import Backend
    from ..core.compat import CompatRules, Stale
    from ..core.inventory import ClassInfo, InventoryRow

#: on a test's setup report under xdist: the reasons of the skipif marks lifted on it
LIFTED_ATTR = "zl_compat_lifted"
#: the skip reasons a lift removed from one item (empty tuple: nothing lifted)
compat_decision_key = pytest.StashKey[tuple[str, ...]]()


class ZlbenchCompatWarning(pytest.PytestWarning):
    """A compat override that matches nothing in the suite any more."""


class _Plan:
    # a plain class, not a dataclass: building a dataclass at import costs every pytest session
    def __init__(self) -> None:
        self.lifted_tests = 0
        self.lifted_marks = 0
        self.kept_tests = 0
        self.stale: list[Stale] = []
        self.inactive: str | None = None
        self.unchecked = 0


class CompatSession:
    """Registered when ``--zl-backend`` names a backend with override data, or with
    ``--zl-inventory``."""

    def __init__(
        self,
        config: pytest.Config,
        backend: Backend | None,
        rules: CompatRules | None,
        inventory: Path | None,
    ) -> None:
        self.config = config
        self.backend = backend
        self.rules = rules
        self.inventory = inventory
        self.plan: _Plan | None = None
        self.vendor = ""
        self._dirs: dict[Path, Path | None] = {}
        self._sources: dict[Path, str] = {}
        self._known: dict[Path, tuple[str, ...]] = {}
        self.inventory_rows = 0
        self.inventory_ops = 0
        self.worker_lifted = 0

    def bench_dir(self, path: Path) -> Path | None:
        if path.parent not in self._dirs:
            self._dirs[path.parent] = bench_dir_of(path)
        return self._dirs[path.parent]

    # ---- collection ------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> Generator[None, None, None]:
        if self.rules is not None and self.backend is not None:
            self.plan = self._lift(self.rules, self.backend, items)
        if self.inventory is not None:
            self._write_inventory(items)
        result = yield
        if self.inventory is not None and items:
            config.hook.pytest_deselected(items=list(items))
            items[:] = []
        return result

    def _lift(self, rules: CompatRules, backend: Backend, items: list[pytest.Item]) -> _Plan:
        plan = _Plan()
        gems = sys.modules.get("flag_gems")
        if gems is None:
            plan.inactive = "flag_gems is not imported by the suite"
            return plan
        vendor = getattr(gems, "vendor_name", None)
        if vendor != backend.vendor:
            plan.inactive = f"flag_gems.vendor_name is {vendor!r}, not {backend.vendor!r}"
            return plan
        self.vendor = str(vendor)
        seen: dict[tuple[Path, str], set[str]] = {}  # (bench dir, file) → its skipif reasons
        # decide first, remove afterwards: a module-level mark is shared by all of the module's
        # items, and every one of them must count it as lifted
        removals: dict[int, tuple[Any, set[int]]] = {}
        candidates: list[pytest.Item] = []
        for item in items:
            item.stash[compat_decision_key] = ()
            bench = self.bench_dir(item.path)
            if bench is None or not item.path.is_relative_to(bench):
                continue
            rel = item.path.relative_to(bench).as_posix()
            reasons = seen.setdefault((bench, rel), set())
            lift = rules.lift_reasons(rel)
            lifted: list[str] = []
            lifted_active = kept_active = False
            for node in reversed(item.listchain()):  # the item, its class, module, package
                for mark in node.own_markers:
                    if mark.name != "skipif":
                        continue
                    reason = mark_reason(mark)
                    reasons.add(reason)
                    active = bool(condition_true(mark, item))
                    if reason in lift:
                        lifted.append(reason)
                        lifted_active = lifted_active or active
                        removals.setdefault(id(node), (node, set()))[1].add(id(mark))
                    elif active and rules.kept(rel, reason):
                        kept_active = True
            item.stash[compat_decision_key] = tuple(lifted)
            if lifted_active:
                candidates.append(item)
            plan.kept_tests += kept_active
        for node, marks in removals.values():
            plan.lifted_marks += len(marks)
            node.own_markers[:] = [m for m in node.own_markers if id(m) not in marks]
        # a lifted test still skipped by another guard of its own is not a lifted skip
        plan.lifted_tests = sum(not still_skips(item) for item in candidates)
        plan.stale = self._stale(rules, seen)
        if not seen:
            plan.unchecked = len(rules.overrides)
        return plan

    def _stale(self, rules: CompatRules, seen: dict[tuple[Path, str], set[str]]) -> list[Stale]:
        from ..core.compat import stale_overrides
        from ..core.inventory import scan_module

        stale: list[Stale] = []
        for bench in sorted({b for b, _ in seen}):
            found: dict[str, Iterable[str] | None] = {}
            for file in rules.files():
                path = bench / file
                if (bench, file) in seen:
                    found[file] = seen[(bench, file)]
                elif not path.is_file():
                    found[file] = None
                else:
                    try:
                        scan = scan_module(path.read_text(encoding="utf-8"), file)
                    except (OSError, ValueError):
                        found[file] = ()
                        continue
                    found[file] = {g for t in scan.tests for g in t.guards}
            stale += stale_overrides(rules, found)
        if _common.is_worker(self.config):  # the controller shows warnings, not this report
            for entry in stale:
                warnings.warn(ZlbenchCompatWarning(f"zlbench compat: {entry.line()}"), stacklevel=1)
        return stale

    def _write_inventory(self, items: list[pytest.Item]) -> None:
        from ..core.inventory import render_tsv

        rows = [self._inventory_row(item) for item in items]
        self.inventory_rows = len(rows)
        self.inventory_ops = len({r.op_id for r in rows})
        path = self.inventory
        if path is None or (
            _common.is_worker(self.config) and _common.worker_id(self.config) != "gw0"
        ):
            return  # every worker collects the same tests; one writes
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(render_tsv(rows), encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            raise pytest.UsageError(
                f"--zl-inventory: cannot write {path}: {exc.strerror}"
            ) from None

    def _inventory_row(self, item: pytest.Item) -> InventoryRow:
        from ..core.inventory import InventoryRow

        bench = self.bench_dir(item.path)
        if bench is not None and item.path.is_relative_to(bench):
            rel = item.path.relative_to(bench).as_posix()
        elif item.path.is_relative_to(self.config.rootpath):
            rel = item.path.relative_to(self.config.rootpath).as_posix()
        else:
            rel = str(item.path)
        reasons = tuple(
            mark_reason(mark)
            for mark in item.iter_markers()
            if mark.name == "skip" or (mark.name == "skipif" and condition_true(mark, item))
        )
        cls = self._class_of(item, bench)
        return InventoryRow(op_id(item), rel, item.nodeid, cls, reasons)

    def _class_of(self, item: pytest.Item, bench: Path | None) -> str:
        from ..core.inventory import (
            SHARED_MODULES,
            benchmark_class_of,
            benchmark_classes,
            scan_module,
        )

        function = getattr(item, "originalname", item.name)
        cls = getattr(item, "cls", None)
        if cls is not None:
            function = f"{cls.__name__}::{function}"
        try:
            if item.path not in self._sources:
                self._sources[item.path] = item.path.read_text(encoding="utf-8")
            known: tuple[str, ...] = ()
            if bench is not None:
                if bench not in self._known:
                    shared: list[ClassInfo] = []
                    for name in SHARED_MODULES:
                        if (bench / name).is_file():
                            text = (bench / name).read_text(encoding="utf-8")
                            shared += scan_module(text, name).classes
                    self._known[bench] = tuple(benchmark_classes(shared))
                known = self._known[bench]
            name = benchmark_class_of(self._sources[item.path], function, known)
        except (OSError, ValueError):
            return ""
        if "|" in name:  # the class is a parameter: the callspec names it
            params = getattr(getattr(item, "callspec", None), "params", {})
            for value in params.values():
                if getattr(value, "__name__", None) in name.split("|"):
                    return str(value.__name__)
        return name

    # ---- reporting -------------------------------------------------------------------------

    @pytest.hookimpl
    def pytest_report_collectionfinish(self, config: pytest.Config) -> list[str]:
        lines: list[str] = []
        quiet = config.get_verbosity() < 0
        plan = self.plan
        if plan is not None and self.rules is not None:
            from ..core.compat import summary_lines

            if plan.inactive is not None:
                if not quiet:
                    lines.append(
                        f"zlbench compat: {self.rules.backend} overrides inactive: {plan.inactive}"
                    )
            else:
                summary = summary_lines(
                    self.rules,
                    self.vendor,
                    plan.lifted_tests,
                    plan.lifted_marks,
                    plan.kept_tests,
                    plan.stale,
                )
                lines += summary[1:] if quiet else summary
                if plan.unchecked:
                    lines.append(
                        f"zlbench compat: no FlagGems benchmark directory among the collected "
                        f"files; {plan.unchecked} overrides not checked"
                    )
        if self.inventory is not None and not quiet:
            lines.append(
                f"zlbench inventory: {self.inventory_rows} tests ({self.inventory_ops} op ids) "
                f"written to {self.inventory}; every test deselected"
            )
        return lines

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        lifted = item.stash.get(compat_decision_key, ())
        if (
            lifted
            and report.when == "setup"
            and not report.skipped
            and _common.is_worker(self.config)
        ):
            setattr(report, LIFTED_ATTR, list(lifted))
        return report

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "setup" and getattr(report, LIFTED_ATTR, None):
            self.worker_lifted += 1

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Under xdist the controller collects nothing: say what the workers did."""
        if _common.is_worker(self.config) or self.config.get_verbosity() < 0:
            return
        if self.plan is None and self.worker_lifted:
            n = self.worker_lifted
            terminalreporter.write_line(
                f"zlbench compat: lifted {n} skip{'s' if n != 1 else ''} on xdist workers"
            )
        if self.inventory is not None and not self.inventory_rows and self.inventory.is_file():
            terminalreporter.write_line(
                f"zlbench inventory: written to {self.inventory} by xdist worker gw0; "
                "every test deselected"
            )


def _check_inventory_path(path: Path) -> None:
    """Refuse a ``--zl-inventory`` path that cannot take an inventory, or would replace a file
    that is not one (a run's ``rows.jsonl``)."""
    if path.is_dir():
        raise pytest.UsageError(f"--zl-inventory: {path} is a directory, not a file")
    for folder in path.parents:
        if folder.exists():
            if not folder.is_dir():
                raise pytest.UsageError(f"--zl-inventory: {folder} is a file, not a folder")
            break
    # the inventory is renamed into place: only a plain file may be replaced (not /dev/null, a
    # FIFO or a link); an empty one (mktemp) holds nothing to lose
    plain = path.is_file() and not path.is_symlink()
    if (path.exists() or path.is_symlink()) and not (plain and path.stat().st_size == 0):
        from ..core.inventory import STATIC_TSV_COLUMNS, TSV_COLUMNS

        head: tuple[str, ...] = ()
        if plain:  # never read a FIFO: it would wait for a writer
            try:
                with path.open(encoding="utf-8") as f:
                    head = tuple(f.readline().rstrip("\n").split("\t"))
            except (OSError, UnicodeDecodeError):
                head = ()
        if head not in (TSV_COLUMNS, STATIC_TSV_COLUMNS):
            raise pytest.UsageError(
                f"--zl-inventory: {path} exists and is not an inventory; give a new file"
            )


def session_for(
    config: pytest.Config, backend_given: bool, inventory_raw: object
) -> CompatSession | None:
    """A :class:`CompatSession` when there is work: override data for the backend that
    ``--zl-backend`` names, or ``--zl-inventory``; else None."""
    rules = None
    backend = None
    if backend_given:
        from ..core.compat import load_rules
        from ..device.backend import backend_of

        backend = backend_of(config)
        try:
            rules = load_rules(backend.compat)
        except ValueError as exc:
            raise pytest.UsageError(f"zlbench compat: {exc}") from None
    inventory = None
    if inventory_raw is not None:
        if _common.mode_of(config).controls:
            raise pytest.UsageError(
                "--zl-inventory lists the suite and runs nothing; it cannot be combined with "
                "--zl-ab, --zl-rounds or --zl-compare"
            )
        inventory = Path(config.invocation_params.dir, str(inventory_raw))
        _check_inventory_path(inventory)
    if rules is None and inventory is None:
        return None  # a backend without override data (cuda, cpu, ...): nothing to do
    return CompatSession(config, backend, rules, inventory)
