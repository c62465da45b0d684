"""The informational parts of a run identity that describe the process and its inputs (the
versions it ran with, the shape file, its IR fingerprint), apart from the recorder."""

from __future__ import annotations

import dataclasses
import hashlib
import platform
import sys
from pathlib import Path

import pytest

from .. import __version__
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


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {
        "python": platform.python_version(),
        "pytest": pytest.__version__,
        "pytest-zlbench": __version__,
    }
    for name in ("torch", "triton", "flag_gems"):
        mod = sys.modules.get(name)
        out[name] = str(getattr(mod, "__version__", "unknown")) if mod is not None else None
    return out


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
