"""The baseline store (``--zl-save``, ``--zl-compare-to``, ``zlbench list``): completed runs and
screens kept under a name, one folder per caliber key, with a small JSON index.

Layout, like pytest-benchmark's machine folders and asv's results directory::

    STORE/index.json                  {"schema": 1, "entries": [{name, kind, saved_at, ...}]}
    STORE/<caliber key>/<name>/...    the result files only (never the caches)

A caliber key is readable (backend, device, timer) and exact (a hash of all seven caliber
fields), so runs that may be compared share a folder. Names are unique in a store and an entry
is never overwritten. A store the first save creates gets a ``.gitignore`` of ``*``, so that a
store inside a checkout stays out of version control (remove it to commit the store). A save
copies into a temporary folder beside its target and renames it into place; the index is
rewritten atomically under an exclusive lock on ``STORE/.lock``.
Pure: no pytest, torch or triton; the callers say which files a run or a screen holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import rundir
from .records import CALIBER_FIELDS, write_atomic, write_json

#: the store's folder under the rootdir when ``--zl-store`` is not given
STORE_DIR = ".zlbench"
INDEX_FILE = "index.json"
#: written into a store the first save creates: git leaves the whole store alone
GITIGNORE_FILE = ".gitignore"
GITIGNORE = "# the pytest-zlbench baseline store: kept out of version control\n*\n"
LOCK_FILE = ".lock"
SCHEMA = 1
KINDS = ("run", "screen")

#: what a stored name may look like: it names a folder
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+=-]*$")


class StoreError(ValueError):
    """A store, entry or name that cannot be used; the message is one line naming the problem."""


@dataclass(frozen=True)
class Entry:
    """One stored run or screen, as the index lists it."""

    name: str
    kind: str
    saved_at: str
    key: str
    caliber: Mapping[str, str]
    source: str = ""
    commit: str | None = None
    dirty: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def relpath(self) -> str:
        return f"{self.key}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "saved_at": self.saved_at,
            "key": self.key,
            "path": self.relpath,
            "commit": self.commit,
            "dirty": self.dirty,
            "source": self.source,
            "caliber": dict(self.caliber),
            "extra": dict(self.extra),
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> Entry:
        if not isinstance(data, Mapping):
            raise StoreError(f"{source}: an entry is not a JSON object")
        try:
            name, kind, saved_at, key = (str(data[k]) for k in ("name", "kind", "saved_at", "key"))
        except KeyError as exc:
            raise StoreError(f"{source}: an entry lacks {exc.args[0]!r}") from None
        caliber = data.get("caliber") or {}
        if not isinstance(caliber, Mapping):
            raise StoreError(f"{source}: entry {name!r}: caliber is not a JSON object")
        extra = data.get("extra") or {}
        dirty = data.get("dirty")
        return cls(
            name=name,
            kind=kind,
            saved_at=saved_at,
            key=key,
            caliber={str(k): str(v) for k, v in caliber.items()},
            source=str(data.get("source", "")),
            commit=str(data["commit"]) if data.get("commit") else None,
            dirty=bool(dirty) if isinstance(dirty, bool) else None,
            extra=dict(extra) if isinstance(extra, Mapping) else {},
        )


def check_name(name: str) -> str:
    """``name`` if it can name a stored entry; a :class:`StoreError` otherwise."""
    if not _NAME.match(name):
        raise StoreError(
            f"{name!r} cannot name a stored run: use letters, digits and _ . + = - "
            "(not starting with . or -)"
        )
    return name


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "x"


def caliber_key(caliber: Mapping[str, str]) -> str:
    """The folder of a caliber: ``<backend>-<device>-<timer>-<hash of the seven fields>``."""
    exact = json.dumps({k: str(caliber.get(k, "")) for k in CALIBER_FIELDS}, sort_keys=True)
    digest = hashlib.sha256(exact.encode()).hexdigest()[:10]
    readable = "-".join(_slug(str(caliber.get(k, ""))) for k in ("backend", "device", "timer"))
    return f"{readable}-{digest}"


class Store:
    """A store folder; nothing is created until the first :meth:`save`."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @property
    def index_path(self) -> Path:
        return self.root / INDEX_FILE

    def entries(self) -> list[Entry]:
        """Every entry, oldest first; an absent store has none."""
        path = self.index_path
        if not path.exists():
            if self.root.exists() and not self.root.is_dir():
                raise StoreError(f"{self.root}: not a directory")
            return []
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise StoreError(f"{path}: unreadable ({type(exc).__name__}: {exc})") from None
        if not isinstance(data, Mapping) or not isinstance(data.get("entries"), list):
            raise StoreError(f"{path}: not a zlbench store index (no entries list)")
        return [Entry.from_json(item, str(path)) for item in data["entries"]]

    def find(self, name: str) -> Entry:
        for entry in self.entries():
            if entry.name == name:
                return entry
        known = ", ".join(e.name for e in self.entries()[-5:]) or "none"
        raise StoreError(f"no stored run or screen named {name!r} in {self.root} (latest: {known})")

    def path_of(self, entry: Entry) -> Path:
        return self.root / entry.key / entry.name

    def check_free(self, name: str) -> None:
        """Refuse a name that is taken (an entry is never overwritten) or malformed."""
        check_name(name)
        if any(e.name == name for e in self.entries()):
            raise StoreError(
                f"{name!r} is already stored in {self.root}; give a new name "
                "(stored entries are never overwritten)"
            )

    def check_writable(self) -> None:
        """Refuse a store that :meth:`save` could not write, before anything is measured: the
        nearest folder of its path that exists must be a writable directory, and the store's
        folder, where it exists, empty or a store (:meth:`check_kind`)."""
        self.check_kind()
        existing = next(p for p in (self.root, *self.root.parents) if os.path.lexists(p))
        if not existing.exists():
            problem = "a link to nothing"
        elif not existing.is_dir():
            problem = "not a directory"
        elif not os.access(existing, os.W_OK | os.X_OK):
            problem = "not writable"
        else:
            return
        raise StoreError(f"{self.root}: cannot be created or written ({existing}: {problem})")

    def check_kind(self) -> None:
        """Refuse a folder that is neither empty nor a store (its marker, or its index, says
        so): a store never writes its index, lock and folders among other files."""
        names = [n for n in rundir.entries(self.root) if n not in (LOCK_FILE, GITIGNORE_FILE)]
        if not names or not self.root.is_dir():
            return
        kind = rundir.kind_of(self.root)
        if kind == rundir.STORE:
            return
        if kind is None:
            shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
            raise StoreError(
                f"{self.root}: not empty and not a zlbench store ({len(names)} entries: "
                f"{shown}); give a new or empty folder"
            )
        raise StoreError(
            f"{self.root}: holds {rundir.KIND_NAMES[kind]}, not a zlbench store; give a new "
            "or empty folder"
        )

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.check_kind()
        try:
            if not self.root.exists():
                self.root.mkdir(parents=True)
                write_atomic(self.root / GITIGNORE_FILE, GITIGNORE)
            if rundir.marked_kind(self.root) != rundir.STORE:
                created = datetime.now(timezone.utc).isoformat(timespec="seconds")
                write_atomic(
                    self.root / rundir.KIND_FILE, rundir.kind_marker(rundir.STORE, created)
                )
            handle = open(self.root / LOCK_FILE, "a")  # noqa: SIM115 (held across the yield)
        except OSError as exc:
            raise StoreError(f"{self.root}: not writable ({exc.strerror or exc})") from None
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def save(
        self,
        source: Path,
        entry: Entry,
        files: Sequence[str],
        sub_files: Sequence[str] = (),
    ) -> Path:
        """Copy ``files`` of ``source`` (those that exist) and ``sub_files`` of each of its
        immediate sub-folders into ``<key>/<name>``, then list ``entry`` in the index; returns
        the stored folder."""
        with self._locked():
            self.check_free(entry.name)
            target = self.root / entry.key / entry.name
            if target.exists():
                raise StoreError(f"{target}: already exists but is not in the index; remove it")
            tmp = target.parent / f".{entry.name}.tmp-{os.getpid()}"
            try:
                shutil.rmtree(tmp, ignore_errors=True)
                tmp.mkdir(parents=True)
                for name in files:
                    if (source / name).is_file():
                        shutil.copy2(source / name, tmp / name)
                if sub_files:
                    for sub in sorted(p for p in source.iterdir() if p.is_dir()):
                        for name in sub_files:
                            if (sub / name).is_file():
                                (tmp / sub.name).mkdir(exist_ok=True)
                                shutil.copy2(sub / name, tmp / sub.name / name)
                os.rename(tmp, target)
            except OSError as exc:
                shutil.rmtree(tmp, ignore_errors=True)
                raise StoreError(f"{target}: not writable ({exc.strerror or exc})") from None
            listed = [e.to_json() for e in self.entries()] + [entry.to_json()]
            try:
                write_json(self.index_path, {"schema": SCHEMA, "entries": listed})
            except OSError as exc:
                shutil.rmtree(target, ignore_errors=True)
                raise StoreError(f"{self.index_path}: not writable ({exc.strerror})") from None
        return target


def list_lines(entries: Sequence[Entry]) -> list[list[str]]:
    """The cells ``zlbench list`` shows per entry: name, kind, saved, commit, caliber key."""
    out = []
    for e in entries:
        commit = (e.commit or "")[:12] + ("+dirty" if e.dirty else "") if e.commit else "-"
        out.append([e.name, e.kind, e.saved_at, commit, e.key])
    return out
