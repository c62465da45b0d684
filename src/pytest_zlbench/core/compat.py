"""Per-backend skip overrides, the dismiss list and the no-capture list:
parse and match.

``ops/compat/<backend>.yaml`` lists *overrides*, each pinned to one test file (relative to the
suite's benchmark directory) and one exact skip reason, and *keep* entries naming guards left in
place on purpose. The ``zlbench.compat`` plugin lifts the ``skipif`` marks an override names when
that backend is selected and FlagGems reports the backend's vendor. Everything here is plain
data; the schemas are documented in ``ops/README.md``.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.util
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .shapes import OPS_DIR as OPS_DIR  # the curated data; found in core/shapes.py
from .shapes import load_yaml

COMPAT_DIR = OPS_DIR / "compat"
DISMISS_PATH = OPS_DIR / "dismiss.yaml"
NO_CAPTURE_PATH = OPS_DIR / "no_capture.yaml"

SCHEMA = 1
SOURCES: tuple[str, ...] = ("reasoned", "probed")
_ENTRY_KEYS = ("file", "reason", "why", "source")
_TOP_KEYS = ("schema", "backend", "flaggems", "overrides", "keep")
_DISMISS_TOP_KEYS = ("schema", "dismissed")
_DISMISS_KEYS = ("reason", "date", "card", "note", "while_missing")
_NO_CAPTURE_TOP_KEYS = ("schema", "no_capture")
_NO_CAPTURE_KEYS = ("reason", "date", "card", "note")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Entry:
    """One override (``kind="override"``) or keep entry (``kind="keep"``)."""

    kind: str
    file: str
    reason: str
    why: str
    source: str

    def label(self) -> str:
        return f"{self.file} {self.reason!r}"


@dataclass(frozen=True)
class CompatRules:
    backend: str
    flaggems: str
    overrides: tuple[Entry, ...]
    keep: tuple[Entry, ...]
    source: str = ""

    def lift_reasons(self, file: str) -> frozenset[str]:
        """Exact reasons whose ``skipif`` marks are lifted in ``file``."""
        return frozenset(e.reason for e in self.overrides if e.file == file)

    def kept(self, file: str, reason: str) -> bool:
        return any(e.file == file and e.reason == reason for e in self.keep)

    def files(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.file for e in self.overrides))


@dataclass(frozen=True)
class Stale:
    """An override that no longer matches the suite: its file is gone, or no guard in that file
    carries its reason any more."""

    entry: Entry
    problem: str

    def line(self) -> str:
        return f"stale override {self.entry.label()}: {self.problem}"


# --------------------------------------------------------------------------------------------
# Override files


def _text(value: Any, where: str, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: '{field}' must be a non-empty string")
    return value


def _file(value: Any, where: str) -> str:
    text = _text(value, where, "file")
    parts = text.split("/")
    if (
        text.startswith("/")
        or "\\" in text
        or not text.endswith(".py")
        or any(p in ("", ".", "..") for p in parts)
    ):
        raise ValueError(
            f"{where}: file {text!r} must be a .py path relative to the benchmark directory"
        )
    return text


def _known_keys(raw: dict[Any, Any], allowed: Sequence[str], where: str) -> None:
    unknown = sorted(set(map(str, raw)) - set(allowed))
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(allowed)})")


def _schema(data: dict[Any, Any], source: str) -> None:
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{source}: schema must be {SCHEMA}, got {data.get('schema')!r}")


def _entry(raw: Any, kind: str, where: str) -> Entry:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a mapping with file, reason, why, source")
    _known_keys(raw, _ENTRY_KEYS, where)
    missing = sorted(set(_ENTRY_KEYS) - set(map(str, raw)))
    if missing:
        raise ValueError(f"{where}: missing {missing[0]!r}")
    source = _text(raw["source"], where, "source")
    if source not in SOURCES:
        raise ValueError(f"{where}: source {source!r} is not one of {', '.join(SOURCES)}")
    reason = raw["reason"]
    if not isinstance(reason, str) or not reason:
        raise ValueError(f"{where}: 'reason' must be the exact, non-empty skip reason")
    return Entry(kind, _file(raw["file"], where), reason, _text(raw["why"], where, "why"), source)


def parse_rules(text: str, source: str = "compat file", backend: str | None = None) -> CompatRules:
    """Rules of one ``ops/compat/<backend>.yaml``; a one-line ``ValueError`` on malformed data.

    :param backend: when given, the file's ``backend:`` must name it.
    """
    data = load_yaml(text, source)
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping with schema, backend, overrides, keep")
    _known_keys(data, _TOP_KEYS, source)
    _schema(data, source)
    name = _text(data.get("backend"), source, "backend")
    if backend is not None and name != backend:
        raise ValueError(f"{source}: backend {name!r} does not match the file name ({backend!r})")
    flaggems = _text(data.get("flaggems"), source, "flaggems")
    entries: dict[str, list[Entry]] = {"override": [], "keep": []}
    for kind, key in (("override", "overrides"), ("keep", "keep")):
        raw = data.get(key)
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            raise ValueError(f"{source}: '{key}' must be a list")
        for index, item in enumerate(raw):
            entries[kind].append(_entry(item, kind, f"{source}: {key}[{index}]"))
    seen: dict[tuple[str, str], str] = {}
    for entry in entries["override"] + entries["keep"]:
        pair = (entry.file, entry.reason)
        if pair in seen:
            what = "twice" if seen[pair] == entry.kind else "as both override and keep"
            raise ValueError(f"{source}: {entry.label()} is listed {what}")
        seen[pair] = entry.kind
    return CompatRules(
        name, flaggems, tuple(entries["override"]), tuple(entries["keep"]), source=source
    )


def load_rules(names: Sequence[str], directory: str | Path | None = None) -> CompatRules | None:
    """The merged rules of ``<directory>/<name>.yaml`` for every name (a backend's ``compat``
    tuple); ``None`` when the backend names none. A named file that is missing is an error.
    ``directory`` defaults to the packaged ``ops/compat``."""
    if not names:
        return None
    if directory is None:
        directory = COMPAT_DIR
    merged: CompatRules | None = None
    for name in names:
        path = Path(directory) / f"{name}.yaml"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"{path}: cannot read ({exc.strerror})") from None
        rules = parse_rules(text, str(path), backend=name)
        if merged is None:
            merged = rules
        else:
            merged = CompatRules(
                merged.backend,
                merged.flaggems,
                merged.overrides + rules.overrides,
                merged.keep + rules.keep,
                source=f"{merged.source}, {rules.source}",
            )
    return merged


def stale_overrides(
    rules: CompatRules, reasons_by_file: Mapping[str, Iterable[str] | None]
) -> list[Stale]:
    """Overrides that match nothing. ``reasons_by_file`` maps each override's file to every
    skip reason found in it (``None``: the file does not exist)."""
    stale = []
    for entry in rules.overrides:
        reasons = reasons_by_file.get(entry.file)
        if reasons is None:
            stale.append(Stale(entry, "file absent from the benchmark directory"))
        elif entry.reason not in set(reasons):
            stale.append(Stale(entry, "no skip guard in that file has this reason"))
    return stale


def summary_lines(
    rules: CompatRules,
    vendor: str,
    lifted_tests: int,
    lifted_marks: int,
    kept_tests: int,
    stale: Sequence[Stale],
) -> list[str]:
    """The collection report of an active rule set."""
    line = (
        f"zlbench compat: {rules.backend} overrides active (flag_gems.vendor_name={vendor}): "
        f"lifted {lifted_tests} skip{'s' if lifted_tests != 1 else ''}"
        f" ({lifted_marks} guard{'s' if lifted_marks != 1 else ''} removed)"
    )
    if kept_tests:
        line += f"; {kept_tests} still skipped by kept guards"
    return [line, *(f"zlbench compat: {s.line()}" for s in stale)]


# --------------------------------------------------------------------------------------------
# Dismiss list


def importable(module: str) -> bool:
    """Whether a top-level module can be imported here (found, not imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except Exception:  # a broken finder or package: it cannot be imported either
        return False


def _dated_entries(
    text: str, source: str, top: str, top_keys: tuple[str, ...], keys: tuple[str, ...]
) -> dict[str, tuple[str, dict[str, Any]]]:
    """The entries of a list keyed by operator id under ``top``, each a mapping with a
    ``reason``, the ``date`` (YYYY-MM-DD) it was verified and the ``card`` it was seen on:
    operator id -> (reason, entry). A one-line ``ValueError`` on malformed data."""
    data = load_yaml(text, source)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping with 'schema' and '{top}'")
    _known_keys(data, top_keys, source)
    _schema(data, source)
    entries = data.get(top)
    if entries is None:
        entries = {}
    if not isinstance(entries, dict):
        raise ValueError(f"{source}: '{top}' must map operator ids to entries")
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for op, raw in entries.items():
        where = f"{source}: {op}"
        if not isinstance(op, str) or not op.strip():
            raise ValueError(f"{source}: operator id {op!r} must be a non-empty string")
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: expected a mapping with reason, date, card")
        _known_keys(raw, keys, where)
        reason = _text(raw.get("reason"), where, "reason")
        date = raw.get("date")
        if isinstance(date, _dt.date):
            date = date.isoformat()
        if not isinstance(date, str) or not _DATE.match(date):
            raise ValueError(f"{where}: 'date' must be YYYY-MM-DD")
        _text(raw.get("card"), where, "card")
        out[op] = (reason, raw)
    return out


def load_dismiss(
    text: str, source: str = "dismiss.yaml", present: Callable[[str], bool] = importable
) -> dict[str, str]:
    """Operator -> the exact skip or error text that got it dismissed (with its date and card).
    An entry with ``while_missing`` (top-level module names: a package the lent machine lacked,
    such as ``vllm``) applies only while one of those modules is missing (``present(name)``
    false), so a machine that has them screens the operator. A one-line ``ValueError`` on
    malformed data."""
    out: dict[str, str] = {}
    for op, (reason, raw) in _dated_entries(
        text, source, "dismissed", _DISMISS_TOP_KEYS, _DISMISS_KEYS
    ).items():
        if "while_missing" not in raw:
            out[op] = reason
            continue
        modules = raw["while_missing"]
        if (
            not isinstance(modules, list)
            or not modules
            or not all(isinstance(m, str) and _MODULE.fullmatch(m) for m in modules)
        ):
            raise ValueError(
                f"{source}: {op}: 'while_missing' must be a list of top-level module names, "
                "e.g. [vllm]"
            )
        missing = [m for m in modules if not present(m)]
        if missing:
            out[op] = f"{reason} (while {', '.join(missing)} cannot be imported)"
    return out


def load_no_capture(text: str, source: str = "no_capture.yaml") -> dict[str, str]:
    """Operator -> why its graph capture kills the process (an abort inside a library, which
    no fallback can catch), with the date and card it was seen on. The graph timer times these
    operators directly. A one-line ``ValueError`` on malformed data."""
    entries = _dated_entries(text, source, "no_capture", _NO_CAPTURE_TOP_KEYS, _NO_CAPTURE_KEYS)
    return {op: reason for op, (reason, _) in entries.items()}


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror})") from None


@functools.lru_cache(maxsize=4)
def _dismiss_table(path: str) -> dict[str, str]:
    return load_dismiss(_read(path), path)


@functools.lru_cache(maxsize=4)
def _no_capture_table(path: str) -> dict[str, str]:
    return load_no_capture(_read(path), path)


def dismissed(op: str, path: str | Path | None = None) -> str | None:
    """The verified reason an operator is not screened, or ``None``: what the A/B controller
    asks before screening ``op``. ``path`` defaults to the packaged ``ops/dismiss.yaml``; the
    file is read once per path (a malformed file raises a one-line ``ValueError``)."""
    return _dismiss_table(str(DISMISS_PATH if path is None else path)).get(op)


def no_capture(op: str, path: str | Path | None = None) -> str | None:
    """Why capturing ``op`` kills the process, or ``None``: what the graph timer asks before
    each test. ``path`` defaults to the packaged ``ops/no_capture.yaml`` (read when asked, so a
    conftest can point ``NO_CAPTURE_PATH`` elsewhere); read once per path."""
    return _no_capture_table(str(NO_CAPTURE_PATH if path is None else path)).get(op)
