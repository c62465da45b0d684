"""Which way a screen runs its two sides when the user names none (``--zl-screen-mode=auto``).

One process measuring both sides (``one-process``) is the most precise screen: the sides share
one process, one set of inputs and one clock, and take every call in turn. It can separate the
sides only where the switch acts when kernels compile: each side compiles its own kernels, into
its own cache folder, with its own variables set. A switch read once at import (a thread count,
a library path, a second compiler build on ``PYTHONPATH``) would act on both sides of one
process alike, so those screens run one process per side in lockstep.

A switch is read when kernels compile when every variable it sets is

* in the installed compiler's cache-invalidating set (Triton's
  ``get_cache_invalidating_env_vars()``: what its on-disk cache key reads), or
* a FlagTree switch (the backend's prefix, e.g. ``FLAGTREE_``), or
* listed in ``ops/compile_switches.yaml``, the list a user extends for a compiler that reads a
  variable at compile time without putting it in its cache key.

Pure: the caller (``screen.settings``) asks the compiler and reads the list."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

import yaml

from .screen_modes import AUTO as AUTO
from .screen_modes import LOCKSTEP, ONE_PROCESS
from .shapes import OPS_DIR

#: the variables a user declares read when kernels compile
COMPILE_SWITCHES_PATH = OPS_DIR / "compile_switches.yaml"


def choose_mode(
    env_b: Mapping[str, str],
    *,
    flagtree_prefix: str,
    compiler_set: Collection[str] | None,
    compiler: str = "Triton",
    listed: Collection[str] = (),
    shared_inputs: bool = False,
) -> tuple[str, str]:
    """``(mode, reason)`` for a screen whose side B sets ``env_b``. ``compiler_set``: those
    of ``env_b``'s variables the installed ``compiler`` puts in its cache key (``None``: no
    compiler, or one that cannot say); ``listed``: ``ops/compile_switches.yaml``'s variables;
    ``shared_inputs``: ``--zl-shared-inputs`` was given (lockstep only)."""
    if shared_inputs:
        return LOCKSTEP, "--zl-shared-inputs shares inputs between two processes in lockstep"
    if not env_b:
        return ONE_PROCESS, "an A/A control: both sides run the same code, timed in one process"
    known = set(compiler_set or ())
    ways: list[str] = []
    for var in env_b:
        if var in known:
            ways.append(f"{var} is in {compiler}'s cache-invalidating set")
        elif flagtree_prefix and var.startswith(flagtree_prefix):
            ways.append(f"{var} is a FlagTree switch")
        elif var in listed:
            ways.append(f"{var} is listed in ops/compile_switches.yaml")
        else:
            where = (
                f"in neither {compiler}'s cache-invalidating set nor"
                if compiler_set is not None
                else f"in no cache-invalidating set (none could be read: {compiler}) nor"
            )
            return LOCKSTEP, (
                f"{var} is {where} ops/compile_switches.yaml: it may be read at import, so "
                "each side runs in its own process"
            )
    return ONE_PROCESS, "; ".join(ways) + ": read when kernels compile, so one process times both"


def load_compile_switches(text: str, source: str = "compile_switches.yaml") -> frozenset[str]:
    """The variable names of ``ops/compile_switches.yaml`` (``schema: 1``, ``variables:`` a
    list of names, or of ``{name, why}``); a one-line ``ValueError`` on malformed data."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{source}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or data.get("schema") != 1:
        raise ValueError(f"{source}: expected a mapping with 'schema: 1' and 'variables'")
    names: set[str] = set()
    for entry in data.get("variables") or ():
        name = entry.get("name") if isinstance(entry, dict) else entry
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{source}: each variable is a name or {{name, why}}, not {entry!r}")
        names.add(name.strip())
    return frozenset(names)


def compile_switches(path: Path | None = None) -> frozenset[str]:
    """``ops/compile_switches.yaml``'s variables (``path``: another list of that form)."""
    where = COMPILE_SWITCHES_PATH if path is None else path
    try:
        text = where.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{where}: cannot read ({exc.strerror})") from None
    return load_compile_switches(text, str(where))
