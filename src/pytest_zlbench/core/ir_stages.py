"""Every compile stage of a Triton cache entry: which files, how each is hashed, and how two
runs' per-stage fingerprints compare (pure: no pytest, torch or triton).

A switch can act at any stage: in the frontend (``TRITON_F32_DEFAULT``), in TTGIR passes
(``DISABLE_MMA_V3``), in LLVM (``DISABLE_LLVM_OPT``), in instruction selection
(``TRITON_DEFAULT_FP_FUSION``) or in the assembler (``DISABLE_PTXAS_OPT``). A TTGIR-only
fingerprint reads "no change" for the last three, so each entry of ``ir.json`` carries one hash
per stage and :func:`compare_stages` names the first stage at which two runs differ. The kernel's
launch settings, kept beside the IR in its metadata ``.json`` (warps, stages, shared memory,
cluster dims: :data:`LAUNCH_KEYS`), are one more stage, ``launch``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .ir_text import elf_digest, normalise_asm, normalise_llvm_ir, strip_locations, text_hash


class _Entry(Protocol):
    """What the comparison reads of a ``fingerprint.IrEntry`` (a Protocol: no import cycle)."""

    @property
    def kernel(self) -> str: ...
    @property
    def hash(self) -> str: ...
    @property
    def stages(self) -> tuple[tuple[str, str], ...] | None: ...


class _Report(Protocol):
    """What the comparison reads of a ``fingerprint.IrReport``."""

    @property
    def entries(self) -> tuple[_Entry, ...]: ...
    @property
    def unknown(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def method(self) -> str: ...
    @property
    def triton_version(self) -> str | None: ...


#: a report whose hashes were made by more than one method (``fingerprint.IrReport.method``)
MIXED = "mixed"


TTGIR = "ttgir"
LAUNCH = "launch"

#: the launch settings of a kernel's metadata ``.json`` that its fingerprint holds: what the
#: driver launches it with (warps per CTA, CTAs and cluster dims, shared and tensor memory,
#: scratch buffers, cooperative grid and programmatic dependent launch), and the pipeline depth
#: and register cap it was compiled for. Other metadata (the cache hash, paths of libraries,
#: the Triton version) says nothing about the launch. Keys a Triton version does not write are
#: left out (``cluster_dims`` is gone from Triton 3.6's metadata, for one).
LAUNCH_KEYS: tuple[str, ...] = (
    "num_warps",
    "num_ctas",
    "cluster_dims",
    "num_stages",
    "warp_size",
    "maxnreg",
    "shared",
    "tmem_size",
    "global_scratch_size",
    "global_scratch_align",
    "profile_scratch_size",
    "profile_scratch_align",
    "launch_cooperative_grid",
    "launch_pdl",
)


def launch_settings(metadata: object) -> dict[str, object] | None:
    """The :data:`LAUNCH_KEYS` of a kernel's metadata (a parsed ``.json``); ``None`` when it is no
    JSON object or holds none of them."""
    if not isinstance(metadata, dict):
        return None
    found = {key: metadata[key] for key in LAUNCH_KEYS if key in metadata}
    return found or None


def launch_digest(raw: bytes) -> str | None:
    """The hash of a metadata ``.json``'s launch settings (:func:`launch_settings`), or ``None``
    when it is not JSON or has none."""
    try:
        settings = launch_settings(json.loads(raw))
    except (UnicodeDecodeError, ValueError):
        return None
    if settings is None:
        return None
    return text_hash(json.dumps(settings, sort_keys=True, separators=(",", ":")))


@dataclass(frozen=True)
class Stage:
    """One file of a cache entry: stage name, file suffix, and how it is normalised.

    ``kind`` is ``"mlir"`` (re-parsed without debug info, or locations stripped), ``"llvm"``
    (:func:`~.ir_text.normalise_llvm_ir`), ``"asm"`` (:func:`~.ir_text.normalise_asm` with
    ``comment``), ``"elf"`` (:func:`~.ir_text.elf_digest` of the bytes) or ``"launch"``
    (:func:`launch_digest` of the metadata ``.json``).
    """

    name: str
    suffix: str
    kind: str
    comment: str = ""


#: Every stage fingerprinted, in compile order (the order in which a first difference is sought).
#: NVIDIA writes source, ttir, ttgir, llir, ptx, cubin; AMD writes amdgcn and hsaco instead of ptx
#: and cubin (both verified on Triton 3.6). Ascend's ``.ttadapter`` (linalg MLIR between TTIR and
#: its binary) is taken from FlagTree's sources, not run.
#: Binaries are hashed only where their debug sections can be told apart: ``.cubin`` and
#: ``.hsaco`` are ELF and only their ``.debug*``/``.nv_debug*`` sections carry paths. Left out,
#: because their formats are unknown here: MUSA's ``.mubin`` and Ascend's ``.npubin``; FlagTree
#: vendors whose binary is ELF could be added with kind ``"elf"`` once checked.
STAGES: tuple[Stage, ...] = (
    Stage("source", ".source", "mlir"),  # frontend TTIR before make_ttir's passes
    Stage("ttir", ".ttir", "mlir"),
    Stage("ttadapter", ".ttadapter", "mlir"),
    Stage(TTGIR, ".ttgir", "mlir"),
    Stage("llir", ".llir", "llvm"),
    Stage("ptx", ".ptx", "asm", "//"),
    Stage("amdgcn", ".amdgcn", "asm", ";"),
    Stage("cubin", ".cubin", "elf"),
    Stage("hsaco", ".hsaco", "elf"),
    # not a compile stage: the launch settings the compiler chose, kept beside the IR; last, so
    # that a first difference is named in the code where the code differs too
    Stage(LAUNCH, ".json", "launch"),
)
STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES)

#: Re-parses one MLIR file and prints it without debug info; ``None`` when it cannot.
NodebugFn = Callable[[str], str | None]


def stage_order(names: Iterable[str]) -> list[str]:
    """``names`` in compile order; names this version does not know go last, by name."""
    known = {name: i for i, name in enumerate(STAGE_NAMES)}
    return sorted(set(names), key=lambda n: (known.get(n, len(known)), n))


def hash_stages(
    ttgir_path: str | os.PathLike[str], ttgir_raw: str, nodebug: NodebugFn | None
) -> tuple[str, str, dict[str, str]]:
    """Normalise every stage file beside one ``<name>.ttgir`` (already read as ``ttgir_raw``).

    Returns ``(method, normalised TTGIR text, {stage: hash})``. The MLIR stages are all re-parsed
    with ``nodebug`` (method ``"nodebug"``) or, when it is missing or fails on any of them, all
    location-stripped (``"stripped"``), so one entry never mixes methods. A stage file that cannot
    be read, a binary that is not a well-formed ELF, or a metadata ``.json`` without launch
    settings is left out of the dict.
    """
    path = Path(ttgir_path)
    stem = path.name[: -len(".ttgir")] if path.name.endswith(".ttgir") else path.stem
    files = {s.name: path.with_name(stem + s.suffix) for s in STAGES}
    mlir = [
        s.name for s in STAGES if s.kind == "mlir" and (s.name == TTGIR or files[s.name].is_file())
    ]
    texts: dict[str, str] = {}
    method = "stripped"
    if nodebug is not None:
        for name in mlir:
            text = nodebug(str(files[name]))
            if not isinstance(text, str):
                texts = {}
                break
            texts[name] = text
        else:
            method = "nodebug"
    if method == "stripped":
        for name in mlir:
            try:
                raw = ttgir_raw if name == TTGIR else files[name].read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            texts[name] = strip_locations(raw)
    hashes: dict[str, str] = {}
    for stage in STAGES:
        file = files[stage.name]
        if stage.kind == "mlir":
            if stage.name in texts:
                hashes[stage.name] = text_hash(texts[stage.name])
            continue
        if not file.is_file():
            continue
        try:
            if stage.kind == "elf":
                digest = elf_digest(file.read_bytes())
            elif stage.kind == "launch":
                digest = launch_digest(file.read_bytes())
            else:
                text = file.read_text(encoding="utf-8")
                llvm = stage.kind == "llvm"
                digest = text_hash(
                    normalise_llvm_ir(text) if llvm else normalise_asm(text, stage.comment)
                )
        except (OSError, UnicodeDecodeError):
            continue
        if digest is not None:
            hashes[stage.name] = digest
    return method, texts[TTGIR], hashes


# -- comparison -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageDiff:
    """How two runs' IR compares stage by stage (the result of :func:`compare_stages`).

    * ``compared``: the stages recorded for every entry of both runs, in compile order.
    * ``first``: the first of them at which the runs differ, ``None`` when all are identical.
      Per stage, each kernel name's multiset of variant hashes is compared; a kernel present on
      one side only differs at every stage.
    * ``kernels``: the kernels that differ at ``first`` (sorted); ``()`` when identical.
    * ``changed``: per compared stage that differs, the kernels that differ there.
    * ``not_compared``: stages recorded for some entries only (one side lacks them, e.g. an
      unparseable binary or a run recorded before stage hashes existed).
    * ``ttgir_only``: a side's ``ir.json`` predates per-stage hashes, so at most TTGIR was
      compared: ``identical`` then says nothing about LLVM IR, PTX or the binary.

    A screen may treat two runs as compiling the same code (skip later rounds) only when
    ``identical and complete``; otherwise name ``first`` (or say what was not compared).
    """

    compared: tuple[str, ...]
    first: str | None
    kernels: tuple[str, ...]
    changed: tuple[tuple[str, tuple[str, ...]], ...] = ()
    not_compared: tuple[str, ...] = ()
    ttgir_only: bool = False

    @property
    def identical(self) -> bool:
        """Every compared stage is identical."""
        return self.first is None

    @property
    def complete(self) -> bool:
        """Every stage either run recorded was compared (so ``identical`` covers all of them)."""
        return not self.ttgir_only and not self.not_compared and bool(self.compared)

    def kernels_at(self, stage: str) -> tuple[str, ...]:
        """The kernels that differ at ``stage`` (``()`` when it is identical or not compared)."""
        return dict(self.changed).get(stage, ())

    def describe(self) -> str:
        """One line for a verdict note, e.g. ``IR first differs at llir (fma_kernel); ttir,
        ttgir identical``."""
        if self.first is None:
            text = f"IR identical at {', '.join(self.compared)}" if self.compared else "no IR"
        else:
            before = self.compared[: self.compared.index(self.first)]
            text = f"IR first differs at {self.first} ({', '.join(self.kernels)})"
            if before:
                text += f"; {', '.join(before)} identical"
        if self.ttgir_only:
            text += "; a run recorded TTGIR only, later stages not compared"
        elif self.not_compared:
            text += f"; not compared: {', '.join(self.not_compared)}"
        return text


def _stages_of(entry: _Entry) -> dict[str, str]:
    """An entry's per-stage hashes; a record without them counts as TTGIR only."""
    return dict(entry.stages) if entry.stages is not None else {TTGIR: entry.hash}


def _multisets(entries: Iterable[_Entry], stage: str) -> dict[str, list[str]]:
    per_kernel: dict[str, list[str]] = {}
    for entry in entries:
        per_kernel.setdefault(entry.kernel, []).append(_stages_of(entry)[stage])
    return {k: sorted(v) for k, v in per_kernel.items()}


def check_comparable(a: _Report, b: _Report) -> None:
    """Raise ``ValueError`` (one line) unless the two reports' hashes may be compared: no
    kernel of unknown IR on either side, same method, neither mixed, and no two different known
    Triton versions."""
    for side, r in (("A", a), ("B", b)):
        if r.unknown:
            kernel, why = r.unknown[0]
            more = f" and {len(r.unknown) - 1} more" if len(r.unknown) > 1 else ""
            raise ValueError(f"{side} launched a kernel of unknown IR: {kernel} ({why}){more}")
    if a.method == MIXED or b.method == MIXED:
        raise ValueError(
            "cannot compare IR fingerprints: a report mixes nodebug and stripped hashes"
        )
    if a.method != b.method:
        raise ValueError(
            f"cannot compare IR fingerprints made by different methods ({a.method} vs {b.method})"
        )
    if a.triton_version and b.triton_version and a.triton_version != b.triton_version:
        raise ValueError(
            "cannot compare IR fingerprints from different Triton versions "
            f"({a.triton_version} vs {b.triton_version})"
        )


def compare_stages(a: _Report, b: _Report) -> StageDiff:
    """Compare two runs' IR stage by stage, in compile order (:data:`STAGES`).

    Returns a :class:`StageDiff`: whether every compared stage is identical (``identical``), the
    first stage at which they differ (``first``) and the kernels that differ there (``kernels``).
    Raises ``ValueError`` (one line) when the hashes are not comparable: different or mixed
    methods, or different known Triton versions (as :func:`.fingerprint.compare`).
    """
    check_comparable(a, b)
    entries = (*a.entries, *b.entries)
    recorded = [set(_stages_of(e)) for e in entries]
    everywhere = set.intersection(*recorded) if recorded else set()
    somewhere = set.union(*recorded) if recorded else set()
    compared = stage_order(everywhere)
    changed: list[tuple[str, tuple[str, ...]]] = []
    for stage in compared:
        ma, mb = _multisets(a.entries, stage), _multisets(b.entries, stage)
        kernels = tuple(sorted(k for k in ma.keys() | mb.keys() if ma.get(k) != mb.get(k)))
        if kernels:
            changed.append((stage, kernels))
    first = changed[0] if changed else None
    return StageDiff(
        compared=tuple(compared),
        first=first[0] if first else None,
        kernels=first[1] if first else (),
        changed=tuple(changed),
        not_compared=tuple(stage_order(somewhere - everywhere)),
        ttgir_only=any(e.stages is None for e in entries),
    )
