"""Which variables the installed Triton reads when kernels compile: those its on-disk cache key
holds (``get_cache_invalidating_env_vars()``, Triton 3.x; in 3.6 a function of
``triton._C.libtriton``, which lists only the variables that are set). Asked lazily, only by a
screen choosing its mode (``core.modes``): in this process where Triton is imported already,
else in a short child process (an import of Triton here would stay for the whole session)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any


def _lister() -> tuple[Callable[[], Mapping[str, Any]] | None, str]:
    """Triton's function listing the cache-invalidating variables that are set, and the
    compiler's name with its version; ``(None, why)`` without one."""
    try:
        import triton
    except Exception as exc:  # not installed, or broken: no set to ask
        return None, f"no Triton ({type(exc).__name__})"
    name = f"Triton {getattr(triton, '__version__', '?')}"
    for module in ("triton._C.libtriton", "triton.compiler.compiler"):
        try:
            found = __import__(module, fromlist=["_"]).get_cache_invalidating_env_vars
        except (ImportError, AttributeError):
            continue
        if callable(found):
            return found, name
    return None, name


def cache_invalidating(env: Mapping[str, str]) -> tuple[frozenset[str] | None, str]:
    """:func:`probe` in this process when Triton is imported, else in a child process."""
    if not env:
        return frozenset(), "Triton"
    if "triton" in sys.modules:
        return probe(env)
    try:
        if importlib.util.find_spec("triton") is None:
            return None, "no Triton"
    except (ImportError, ValueError):
        return None, "no Triton"
    code = (
        "import json, sys\n"
        "from pytest_zlbench.adapters.compile_env import probe\n"
        "found, name = probe(json.loads(sys.argv[1]))\n"
        "print(json.dumps([None if found is None else sorted(found), name]))\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, json.dumps(dict(env))],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        found, name = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None, "Triton (it could not be asked)"
    return (None if found is None else frozenset(map(str, found))), str(name)


def probe(env: Mapping[str, str]) -> tuple[frozenset[str] | None, str]:
    """Of the variables ``env`` sets, those the installed Triton's cache key reads, with the
    compiler's name; ``None`` where no Triton can say. Each variable is set (to its value, or
    ``1`` when empty) only while Triton is asked, then restored."""
    lister, compiler = _lister()
    if lister is None:
        return None, compiler
    found: set[str] = set()
    for var, value in env.items():
        before = os.environ.get(var)
        os.environ[var] = value or "1"
        try:
            if var in lister():
                found.add(var)
        except Exception:
            return None, compiler
        finally:
            if before is None:
                del os.environ[var]
            else:
                os.environ[var] = before
    return frozenset(found), compiler
