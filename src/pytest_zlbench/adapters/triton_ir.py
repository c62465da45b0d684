"""Lazy glue to Triton's MLIR parser for IR fingerprints.

Nothing here imports triton at module import time. :func:`nodebug_text` is the ``nodebug``
callable that ``core.fingerprint.scan_cache`` accepts; it re-parses every MLIR stage of a cache
entry (``.source``, ``.ttir``, ``.ttgir``). The lower stages (LLVM IR, PTX/AMDGCN, cubin/hsaco)
need no Triton: ``core.ir_text`` normalises them as text or ELF.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# One MLIR context per process, with every dialect we can load; ``False`` once loading failed.
_CONTEXT: Any = None


def triton_version() -> str | None:
    """The installed Triton's version, or ``None`` when triton cannot be imported."""
    try:
        import triton
    except ImportError:
        return None
    version = getattr(triton, "__version__", None)
    return version if isinstance(version, str) else None


def _context() -> Any:
    """The process-wide MLIR context with the Triton and backend dialects loaded, or ``None``."""
    global _CONTEXT
    if _CONTEXT is None:
        try:
            from triton._C import libtriton

            ctx = libtriton.ir.context()
            libtriton.ir.load_dialects(ctx)
        except Exception:  # ImportError, or a broken/foreign build of libtriton
            _CONTEXT = False
            return None
        # Backend dialects (ttng/nvgpu on NVIDIA, amdgpu on AMD) where this build has them.
        for backend in ("nvidia", "amd"):
            try:
                getattr(libtriton, backend).load_dialects(ctx)
            except Exception:  # not built into this libtriton: its ops stay unparseable
                pass
        _CONTEXT = ctx
    return None if _CONTEXT is False else _CONTEXT


def _written_by_other_version(path: Path, installed: str) -> bool:
    """Whether the sibling ``<name>.json`` says another Triton version wrote this file."""
    meta = path.with_name(path.name[: -len(path.suffix)] + ".json")
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    written = data.get("triton_version") if isinstance(data, dict) else None
    return isinstance(written, str) and written != installed


def nodebug_text(path: str) -> str | None:
    """Re-parse an MLIR cache file (``.ttgir``, ``.ttir``, ``.source``) with Triton and print it
    without debug info.

    Returns ``None`` when triton is not importable, the file was written by another Triton
    version (dialect syntax is version-specific), or parsing fails for any reason; the caller then
    falls back to text-only location stripping.
    """
    file = Path(path)
    if not file.is_file():  # MLIR would print its own diagnostic to stderr
        return None
    installed = triton_version()
    if installed is None or _written_by_other_version(file, installed):
        return None
    ctx = _context()
    if ctx is None:
        return None
    try:
        from triton._C.libtriton import ir

        module = ir.parse_mlir_module(str(file), ctx)
        text = module.str_nodebug()
    except Exception:
        return None
    return text if isinstance(text, str) else None
