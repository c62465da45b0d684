"""The informational parts of a run identity that describe the process and its inputs (the
versions it ran with, the shape file, its IR fingerprint), apart from the recorder."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .. import __version__, _common
from ..contract import IR_FILE, TRITON_CACHE_DIR


def write_ir(run_dir: Path) -> str:
    """Write ``ir.json`` from the run's own Triton cache; returns a note for the log."""
    cache = run_dir / TRITON_CACHE_DIR
    if not cache.is_dir():
        return "no triton cache"
    try:
        from ..core.fingerprint import scan_cache
    except ImportError:
        return "fingerprint unavailable"
    nodebug = None
    version = None
    if "triton" in sys.modules:
        from ..adapters.triton_ir import nodebug_text, triton_version

        nodebug = nodebug_text
        version = triton_version()
    report = scan_cache(cache, nodebug=nodebug)
    if version is not None and report.triton_version is None:
        report = dataclasses.replace(report, triton_version=version)
    report.write(run_dir / IR_FILE)
    return f"{len(report.entries)} ttgir files"


#: distribution name → module name of the versions a run identity records
VERSIONED = {
    "torch": "torch",
    "triton": "triton",
    "flag_gems": "flag_gems",
    "pytest": "pytest",
    "pytest-zlbench": "pytest_zlbench",
}
#: seconds a git query may take before its field is recorded as null
GIT_TIMEOUT = 5.0


def _module_dir(module: str) -> Path | None:
    """The folder a top-level module is (or would be) imported from, without importing it."""
    mod = sys.modules.get(module)
    origin = getattr(mod, "__file__", None) if mod is not None else None
    if origin is None:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return None
        origin = spec.origin if spec is not None else None
    return Path(origin).parent if origin else None


def version_of(dist: str, module: str) -> str | None:
    """A distribution's version: its package metadata, else the imported module's
    ``__version__``, else ``git:<commit>[+dirty]`` of the work tree it is imported from (a
    FlagGems checkout on ``pythonpath`` has no metadata and no ``__version__``); ``None`` when
    it is not installed."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        pass
    mod = sys.modules.get(module)
    version = getattr(mod, "__version__", None) if mod is not None else None
    if version:
        return str(version)
    folder = _module_dir(module)
    if folder is None:
        return None
    state = git_state(folder, tracked="__init__.py")
    if state is None:
        return "unknown"
    return f"git:{state['commit']}" + ("+dirty" if state["dirty"] else "")


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist, module in VERSIONED.items():
        out[dist] = version_of(dist, module)
    if out["pytest-zlbench"] is None:
        out["pytest-zlbench"] = __version__
    return out


def _git(folder: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None  # no git, or it hung
    return proc.stdout if proc.returncode == 0 else None


def git_state(folder: Path, tracked: str | None = None) -> dict[str, Any] | None:
    """``{"path", "commit", "dirty"}`` of the git work tree holding ``folder``; ``None`` without
    git, outside a work tree, or past :data:`GIT_TIMEOUT`. Dirty: ``git status --porcelain``
    lists anything (untracked files included). With ``tracked`` (a file name in ``folder``, or
    ``"."`` for anything under it), only a work tree that tracks it counts: a package installed
    into a virtual environment, or an export unpacked into an ignored folder, that happens to
    lie inside some checkout is not built from it."""
    if not folder.is_dir():
        return None
    top = _git(folder, "rev-parse", "--show-toplevel")
    head = _git(folder, "rev-parse", "HEAD")
    if not top or not head:
        return None
    if tracked is not None and not (_git(folder, "ls-files", "--", tracked) or "").strip():
        return None
    status = _git(folder, "status", "--porcelain")
    return {
        "path": top.strip(),
        "commit": head.strip(),
        "dirty": None if status is None else bool(status.strip()),
    }


def tree_state(module: str) -> str | None:
    """The git commit of the work tree ``module`` is imported from (``None`` outside one), with
    a hash of its uncommitted changes when it has any."""
    folder = _module_dir(module)
    state = git_state(folder, tracked="__init__.py") if folder is not None else None
    if state is None:
        return None
    if not state["dirty"]:
        return str(state["commit"])
    diff = _git(folder, "diff", "HEAD") if folder is not None else None
    digest = hashlib.sha256((diff or "unknown").encode()).hexdigest()[:12]
    return f"{state['commit']}+dirty:{digest}"


def flaggems_state(rootdir: Path) -> dict[str, Any] | None:
    """:func:`git_state` of the work tree the tests run from (the rootdir), when it tracks
    anything under the rootdir."""
    return git_state(rootdir, tracked=".")


def checkouts(rootdir: Path) -> dict[str, dict[str, Any] | None]:
    """The commits the run's code came from: ``flaggems`` is the work tree the tests run from
    (the rootdir), ``triton`` the one Triton (or FlagTree) is imported from when that is a
    git work tree (an editable build); ``null`` where there is none, or where the enclosing
    work tree tracks nothing under the folder."""
    triton = _module_dir("triton")
    return {
        "flaggems": flaggems_state(rootdir),
        "triton": git_state(triton, tracked="__init__.py") if triton is not None else None,
    }


def shape_mode(config: pytest.Config) -> str:
    path = config.getoption("shape_file", None)
    if not path:
        return "upstream"
    p = Path(str(path))
    if p.name == "core_shapes.yaml" and p.parent.name == "benchmark":
        return "upstream"
    try:
        digest = hashlib.sha256(p.read_bytes()).hexdigest()[:12]
    except OSError:
        return f"{p.name}:unreadable"
    return f"{p.name}:{digest}"


def state_of(config: pytest.Config, cards: list[str]) -> dict[str, Any]:
    """The card's driver, clocks and power limit now (``adapters.device_info.device_state``).
    ``cards`` are the rows' cards (``NAME [PCI bus id]``): the PCI bus ids name exactly the
    cards that measured. Without them (at the start of a run): ``--zl-devices``, else the
    backend's visibility variable, else card 0 (indexes as ``nvidia-smi`` counts them)."""
    from ..adapters.device_info import device_state
    from ..device.backend import backend_of

    try:
        backend = backend_of(config)
    except Exception as exc:  # never fail a run for an informational field
        return {"tool": None, "reason": f"backend unknown ({type(exc).__name__})"}
    ids = [c.rsplit("[", 1)[1].rstrip("]") for c in cards if c.endswith("]") and "[" in c]
    if not ids:
        listed = _common.raw(config, "zl_devices") or (
            os.environ.get(backend.visibility_var, "") if backend.visibility_var else ""
        )
        ids = [part.strip() for part in str(listed).split(",") if part.strip()]
    return device_state(backend.name, ids)
