"""Which compiled Triton kernels each operator launched, in a process that runs many operators.

A side worker of a screen serves a whole batch of operators in one process, so its Triton cache
holds every operator's kernels together, and a kernel that an earlier operator compiled is not
compiled again for a later one. An operator's IR fingerprint is therefore taken from what it
*launched*: the set of compiled kernels run between :meth:`LaunchRecorder.begin` and
:meth:`LaunchRecorder.end`, each with its cache entry.

Two hook chains of Triton 3.5+ (``triton.knobs.runtime``) tell it:

* ``kernel_load_end_hook(module, function, name, metadata_group, hash)`` runs once per compiled
  kernel and device, when ``CompiledKernel._init_handles`` has loaded its binary, before its
  first launch: it maps the function handle to the kernel's hash and stage files;
* ``launch_enter_hook(metadata)`` runs before every launch with a ``LazyDict`` holding at least
  ``name``, ``function`` and ``stream``. Both ``JITFunction.run`` and
  ``CompiledKernel.__getitem__`` (which FlagGems' ``LibEntry`` calls for every launch after the
  first) pass it to the launcher, which calls it.

The handle map lives as long as the recorder, so a kernel loaded during an earlier operator is
known when a later one launches it. A kernel loaded before :meth:`LaunchRecorder.install` is
reported by name with unknown IR. :func:`op_ir` turns the launched kernels into the entries of a
run's ``ir.json`` (:func:`ir_entry`, one kernel's entry, is the one place that reads its files).
Nothing here imports triton at module import time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.fingerprint import (
    TTGIR_SUFFIX,
    IrEntry,
    IrReport,
    file_entry,
    report_method,
)
from ..core.ir_stages import NodebugFn
from ..core.records import write_json
from .triton_ir import nodebug_text

#: why a launched kernel's IR is unknown: it was loaded before the recorder was installed
LOADED_BEFORE_INSTALL = "loaded before the launch recorder was installed"
#: ... or (one side of a one-process worker) its cache entry is not in that side's folder
COMPILED_ELSEWHERE = "compiled outside this side's cache folder ({home})"


@dataclass(frozen=True)
class Launched:
    """One compiled kernel an operator launched."""

    name: str
    #: Triton's hash of the compiled kernel (``metadata["hash"]``); ``None``: IR unknown
    hash: str | None = None
    #: its cache entry, stage file name -> absolute path (``.ttgir``, ``.ptx``, ``.json``, ...)
    files: tuple[tuple[str, str], ...] = ()

    @property
    def metadata_group(self) -> dict[str, str]:
        return dict(self.files)

    def stage(self, suffix: str) -> str | None:
        """The path of its file ending in ``suffix`` (``".ttgir"``), or ``None``."""
        return next((p for f, p in self.files if f.endswith(suffix)), None)


class LaunchRecorder:
    """Records, between :meth:`begin` and :meth:`end`, the distinct kernels launched.

    The hooks are cheap outside a recording (one attribute read) and never raise into a launch:
    a launch the hook cannot read counts as a kernel of unknown IR named ``"?"``.
    """

    def __init__(self, when: Callable[[], bool] | None = None) -> None:
        #: records a launch only while ``when()`` holds (a one-process worker's recorder of one
        #: side: while that side is in use)
        self.when = when
        self._loaded: dict[Any, Launched] = {}  # function handle -> its kernel
        self._launched: dict[Any, Launched] | None = None  # None: not recording
        self.op: str | None = None
        self._chains: tuple[Any, Any] | None = None

    # -- lifetime ----------------------------------------------------------------------------

    def install(self) -> None:
        """Join Triton's load and launch hook chains (a no-op when already installed)."""
        if self._chains is not None:
            return
        import triton

        runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
        load: Any = getattr(runtime, "kernel_load_end_hook", None)
        launch: Any = getattr(runtime, "launch_enter_hook", None)
        for chain in (load, launch):
            if not callable(getattr(chain, "add", None)):
                raise RuntimeError(
                    f"triton {getattr(triton, '__version__', '?')} has no launch hook chains "
                    "(knobs.runtime.kernel_load_end_hook, launch_enter_hook): per-operator IR "
                    "needs Triton 3.5 or later"
                )
        load.add(self._on_load)
        launch.add(self._on_launch)
        self._chains = (load, launch)

    def uninstall(self) -> None:
        if self._chains is None:
            return
        load, launch = self._chains
        load.remove(self._on_load)
        launch.remove(self._on_launch)
        self._chains = None

    def begin(self, op: str) -> None:
        """Start recording the launches of operator ``op``."""
        self.op = op
        self._launched = {}

    def end(self) -> list[Launched]:
        """Stop recording: the distinct kernels launched since :meth:`begin`, sorted by name and
        hash (unknown ones first among their name)."""
        launched, self._launched = self._launched, None
        if launched is None:
            raise RuntimeError("LaunchRecorder.end() without begin()")
        distinct = {(k.name, k.hash): k for k in launched.values()}
        return [distinct[key] for key in sorted(distinct, key=lambda k: (k[0], k[1] or ""))]

    # -- hooks -------------------------------------------------------------------------------

    def _on_load(
        self, module: Any, function: Any, name: Any, metadata_group: Any, hash: Any
    ) -> None:
        try:
            files = tuple(sorted((str(f), str(p)) for f, p in dict(metadata_group).items()))
            self._loaded[function] = Launched(str(name), str(hash), files)
        except Exception:  # an unhashable handle, a group that is not a mapping: unknown IR
            pass

    def _on_launch(self, metadata: Any) -> None:
        launched = self._launched
        if launched is None or (self.when is not None and not self.when()):
            return
        try:
            # the plain fields, without running the kernel's own ``launch_metadata`` callback
            # that ``LazyDict.get()`` would call on every launch
            data = getattr(metadata, "data", None)
            if not isinstance(data, Mapping):
                data = metadata.get()
            function = data["function"]
            if function not in launched:
                known = self._loaded.get(function)
                launched[function] = known or Launched(str(data.get("name", "?")))
        except Exception:  # never fail a launch for the record's sake
            launched[("?", id(metadata))] = Launched("?")


# ---------------------------------------------------------------------------------------------
# ir.json entries


@dataclass(frozen=True)
class OpIr:
    """One operator's IR: the ``ir.json`` report of the kernels it launched whose IR is known,
    and (``report.unknown``) the kernels it launched whose IR is not, with why: a comparison
    that sees any on either side cannot say the IR is the same (``core.fingerprint``)."""

    report: IrReport

    @property
    def unknown(self) -> tuple[tuple[str, str], ...]:
        """(kernel name, why its IR is unknown)"""
        return self.report.unknown

    def to_json(self) -> dict[str, Any]:
        return {
            **self.report.to_json(),
            "unknown": [{"kernel": k, "reason": why} for k, why in self.unknown],
        }

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the ``ir.json`` form (with its ``unknown`` list) atomically."""
        write_json(path, self.to_json())


def _metadata(kernel: Launched) -> dict[str, Any]:
    """The kernel's ``<name>.json`` metadata, or ``{}`` when absent or not a JSON object."""
    path = next(
        (p for f, p in kernel.files if f.endswith(".json") and not f.startswith("__grp__")), None
    )
    if path is None:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def ir_entry(kernel: Launched, nodebug: NodebugFn | None = nodebug_text) -> IrEntry:
    """The ``ir.json`` entry of one launched kernel, from its ``.ttgir`` file, as
    ``core.fingerprint.scan_cache`` makes it for a file of a cache (``path`` relative to the
    cache root: ``<hash directory>/<name>.ttgir``). Raises ``ValueError`` (one line, the reason)
    when its IR is unknown or unreadable."""
    if kernel.hash is None:
        raise ValueError(LOADED_BEFORE_INSTALL)
    ttgir = kernel.stage(TTGIR_SUFFIX)
    if ttgir is None:
        raise ValueError("its cache entry has no .ttgir (TRITON_STORE_BINARY_ONLY?)")
    path = Path(ttgir)
    entry, _ = file_entry(path, f"{path.parent.name}/{path.name}", nodebug)
    return entry


def op_ir(
    kernels: Iterable[Launched],
    nodebug: NodebugFn | None = nodebug_text,
    triton_version: str | None = None,
    home: Path | None = None,
) -> OpIr:
    """One operator's IR from the kernels it launched (:meth:`LaunchRecorder.end`): entries
    sorted by path, as in ``ir.json``; ``triton_version`` defaults to the one the kernels'
    metadata names. ``home``: the cache folder of one side of a one-process worker, where each
    of the side's kernels was compiled; a kernel whose entry lies elsewhere was compiled for
    another side, and its IR is unknown for this one."""
    entries: list[IrEntry] = []
    unknown: list[tuple[str, str]] = []
    versions: set[str] = set()
    root = home.resolve() if home is not None else None
    for kernel in kernels:
        ttgir = kernel.stage(TTGIR_SUFFIX)
        if (
            root is not None
            and ttgir is not None
            and not Path(ttgir).resolve().is_relative_to(root)
        ):
            unknown.append((kernel.name, COMPILED_ELSEWHERE.format(home=home)))
            continue
        try:
            entries.append(ir_entry(kernel, nodebug))
        except ValueError as exc:
            unknown.append((kernel.name, str(exc)))
            continue
        version = _metadata(kernel).get("triton_version")
        if isinstance(version, str):
            versions.add(version)
    if triton_version is None and versions:
        triton_version = ",".join(sorted(versions))
    frozen = tuple(sorted(entries, key=lambda e: e.path))
    default = "nodebug" if nodebug is not None else "stripped"
    report = IrReport(
        frozen, report_method(frozen, default), triton_version, tuple(sorted(unknown))
    )
    return OpIr(report)
