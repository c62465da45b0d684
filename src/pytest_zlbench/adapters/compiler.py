"""Which Triton compiler is installed: upstream Triton or FlagTree, with its version.

FlagTree installs the same ``triton`` package as upstream Triton under another distribution name
(``flagtree``), so ``import triton`` cannot tell them apart; the installed distributions' metadata
can, without importing either. Upstream Triton ignores every ``FLAGTREE_*`` variable: a screen of
a FlagTree switch on it compiles the same code on both sides.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

#: the distributions that install the ``triton`` package, the first found naming the compiler
DISTRIBUTIONS: tuple[tuple[str, str], ...] = (("flagtree", "FlagTree"), ("triton", "Triton"))
FLAGTREE = "FlagTree"
TRITON = "Triton"


def _provides_imported_triton(dist: importlib.metadata.Distribution) -> bool | None:
    """Whether ``dist``'s files hold the ``triton/__init__.py`` that ``import triton`` would load;
    ``None`` when either is unknown (no file list, no importable triton)."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec is not None else None
    files = dist.files
    if origin is None or files is None:
        return None
    for file in files:
        if file.as_posix() == "triton/__init__.py":
            try:
                return Path(str(dist.locate_file(file))).resolve() == Path(origin).resolve()
            except OSError:
                return None
    return False


def installed() -> dict[str, str] | None:
    """``{"name": "FlagTree" | "Triton", "version": ...}`` of the compiler ``import triton`` loads,
    from the installed distributions' metadata; ``None`` when neither is installed. Where both are
    installed, the one whose files hold the ``triton`` package that imports wins (FlagTree when
    that cannot be told)."""
    found: list[tuple[str, importlib.metadata.Distribution]] = []
    for dist_name, name in DISTRIBUTIONS:
        try:
            found.append((name, importlib.metadata.distribution(dist_name)))
        except importlib.metadata.PackageNotFoundError:
            continue
    if not found:
        return None
    chosen = found[0]
    if len(found) > 1:
        chosen = next((f for f in found if _provides_imported_triton(f[1])), chosen)
    name, dist = chosen
    return {"name": name, "version": str(dist.version)}
