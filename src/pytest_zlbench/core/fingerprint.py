"""IR fingerprints of a Triton cache directory (pure: no pytest, torch or triton).

A run's fingerprint is, per kernel name, the sorted multiset of normalised TTGIR hashes of its
variants (SPEC §7, triton-ir.md §3). Each entry also carries one hash per compile stage (TTIR,
TTGIR, LLVM IR, PTX or the vendor's ISA, the binary; ``core.ir_stages``), compared by
:func:`compare_stages`. Normalisation is either Triton's own re-parse without debug
info (method ``nodebug``, supplied by ``adapters.triton_ir.nodebug_text``) or the text-only
location stripping of :func:`strip_locations` (method ``stripped``). Hashes made by different
methods are never compared. Cache hash-directory names are not part of the fingerprint: a
cache-invalidating switch renames every directory even where the TTGIR is identical.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .ir_stages import (
    MIXED,
    STAGE_NAMES,
    STAGES,
    TTGIR,
    NodebugFn,
    StageDiff,
    check_comparable,
    compare_stages,
    hash_stages,
    stage_order,
)
from .ir_text import strip_locations, text_hash
from .records import write_json

__all__ = [
    "STAGES",
    "STAGE_NAMES",
    "IrDiff",
    "IrEntry",
    "IrReport",
    "StageDiff",
    "check_comparable",
    "compare",
    "compare_stages",
    "count_convert_layout",
    "kernel_name",
    "scan_cache",
    "specialisation_key",
    "specialisation_only",
    "strip_locations",
    "text_hash",
]

SCHEMA = 1
METHODS: tuple[str, ...] = ("nodebug", "stripped")

TTGIR_SUFFIX = ".ttgir"

# An op occurrence: the op name not preceded by an identifier character, '.' or '#' (layout
# aliases such as ``#ttg.blocked`` never spell the op, but be strict anyway); the generic form
# ``"ttg.convert_layout"(...)`` is preceded by a quote and counts.
_CONVERT_LAYOUT = re.compile(r"(?<![\w.#])ttg\.convert_layout(?![\w.])")


def count_convert_layout(text: str) -> int:
    """Number of ``ttg.convert_layout`` op occurrences in TTGIR text (triton-ir.md §4)."""
    return len(_CONVERT_LAYOUT.findall(text))


def kernel_name(filename: str | os.PathLike[str]) -> str:
    """Kernel name of a cache artifact: the stem of ``<name>.ttgir``, a leading ``@`` removed."""
    name = os.path.basename(os.fspath(filename))
    stem = name[: -len(TTGIR_SUFFIX)] if name.endswith(TTGIR_SUFFIX) else Path(name).stem
    return stem[1:] if stem.startswith("@") else stem


def specialisation_key(text: str) -> str:
    """Hash of a normalised TTGIR's public function headers: argument types, the
    ``tt.divisibility`` attributes and which arguments became constants. Two variants with the
    same key were compiled for the same specialisation; Triton picks the specialisation from
    runtime values (pointer alignment, integers divisible by 16 or equal to 1)."""
    heads = [ln.strip() for ln in text.splitlines() if ln.lstrip().startswith("tt.func public @")]
    return text_hash("\n".join(heads))


@dataclass(frozen=True)
class IrEntry:
    """One ``.ttgir`` file of a cache: where it is, whose it is, its normalised TTGIR hash and
    (``stages``) the hash of every stage file beside it, in compile order."""

    path: str
    kernel: str
    hash: str
    method: str
    convert_layout: int
    num_warps: int | None = None
    num_stages: int | None = None
    num_ctas: int | None = None
    #: :func:`specialisation_key` of the normalised text; ``None`` in ir.json files written
    #: before it was recorded
    signature: str | None = None
    #: ``(stage, hash)`` pairs in compile order, TTGIR included (``core.ir_stages``); ``None`` in
    #: ir.json files written before stages were recorded (their comparisons are TTGIR-only)
    stages: tuple[tuple[str, str], ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "kernel": self.kernel,
            "hash": self.hash,
            "method": self.method,
            "convert_layout": self.convert_layout,
            "num_warps": self.num_warps,
            "num_stages": self.num_stages,
            "num_ctas": self.num_ctas,
        }
        if self.signature is not None:
            out["signature"] = self.signature
        if self.stages is not None:
            out["stages"] = dict(self.stages)
        return out

    @classmethod
    def from_json(cls, data: Any, source: str = "ir.json") -> IrEntry:
        if not isinstance(data, Mapping):
            raise ValueError(f"{source}: entry is not an object")
        for key in ("path", "kernel", "hash", "method"):
            if not isinstance(data.get(key), str):
                raise ValueError(f"{source}: entry field {key!r} must be a string")
        if data["method"] not in METHODS:
            raise ValueError(f"{source}: entry method {data['method']!r} not in {METHODS}")
        count = data.get("convert_layout")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ValueError(f"{source}: entry field 'convert_layout' must be an integer >= 0")
        optional: dict[str, int | None] = {}
        for key in ("num_warps", "num_stages", "num_ctas"):
            value = data.get(key)
            if value is not None and not _is_int(value):
                raise ValueError(f"{source}: entry field {key!r} must be an integer or null")
            optional[key] = value
        signature = data.get("signature")
        if signature is not None and not isinstance(signature, str):
            raise ValueError(f"{source}: entry field 'signature' must be a string or null")
        stages = _stages_from_json(data.get("stages"), data["hash"], source)
        return cls(
            path=data["path"],
            kernel=data["kernel"],
            hash=data["hash"],
            method=data["method"],
            convert_layout=count,
            signature=signature,
            stages=stages,
            **optional,
        )


def _stages_from_json(
    value: object, ttgir_hash: str, source: str
) -> tuple[tuple[str, str], ...] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{source}: entry field 'stages' must map stage names to hashes")
    if value.get(TTGIR, ttgir_hash) != ttgir_hash:
        raise ValueError(f"{source}: entry's stages.ttgir does not match its hash")
    return tuple((name, value[name]) for name in stage_order(value))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def report_method(entries: tuple[IrEntry, ...], default: str = "stripped") -> str:
    """The method of some entries: theirs if they agree, ``"mixed"`` if not, else ``default``."""
    methods = {e.method for e in entries}
    if not methods:
        return default
    return methods.pop() if len(methods) == 1 else MIXED


@dataclass(frozen=True)
class IrReport:
    """Every ``.ttgir`` of one run's Triton cache, as written to ``ir.json``.

    ``method`` is ``"nodebug"`` or ``"stripped"`` when every entry used it, ``"mixed"`` otherwise.
    ``triton_version`` is the version that wrote the cache (from the metadata ``.json`` files).
    ``unknown``: (kernel, why) of kernels the run launched whose IR it could not take; a report
    that names one is compared with nothing.
    """

    entries: tuple[IrEntry, ...]
    method: str
    triton_version: str | None = None
    unknown: tuple[tuple[str, str], ...] = ()

    def fingerprint(self) -> dict[str, list[str]]:
        """Per kernel name, the sorted list (a multiset) of its variants' hashes."""
        per_kernel: dict[str, list[str]] = {}
        for entry in self.entries:
            per_kernel.setdefault(entry.kernel, []).append(entry.hash)
        return {kernel: sorted(per_kernel[kernel]) for kernel in sorted(per_kernel)}

    def convert_layout_total(self) -> int:
        return sum(e.convert_layout for e in self.entries)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "method": self.method,
            "triton_version": self.triton_version,
            "entries": [e.to_json() for e in self.entries],
            "fingerprint": self.fingerprint(),
            **({"unknown": _unknown_json(self.unknown)} if self.unknown else {}),
        }

    @classmethod
    def from_json(cls, data: Any, source: str = "ir.json") -> IrReport:
        """Parse the ``ir.json`` form; raise ``ValueError`` (one line) on malformed input."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{source}: not a JSON object")
        if data.get("schema") != SCHEMA:
            raise ValueError(f"{source}: unsupported schema {data.get('schema')!r}")
        method = data.get("method")
        if method not in (*METHODS, MIXED):
            raise ValueError(f"{source}: method {method!r} not in {(*METHODS, MIXED)}")
        version = data.get("triton_version")
        if version is not None and not isinstance(version, str):
            raise ValueError(f"{source}: triton_version must be a string or null")
        raw_entries = data.get("entries")
        if not isinstance(raw_entries, list):
            raise ValueError(f"{source}: entries must be a list")
        entries = tuple(IrEntry.from_json(e, source) for e in raw_entries)
        if entries and report_method(entries) != method:
            raise ValueError(
                f"{source}: method {method!r} does not match the entries' "
                f"{report_method(entries)!r}"
            )
        unknown = _unknown_from_json(data.get("unknown", []), source)
        report = cls(entries=entries, method=method, triton_version=version, unknown=unknown)
        if "fingerprint" in data and data["fingerprint"] != report.fingerprint():
            raise ValueError(f"{source}: fingerprint does not match the entries")
        return report

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write ``ir.json`` atomically."""
        write_json(path, self.to_json())

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> IrReport:
        """Read ``ir.json``; raise ``ValueError`` (one line) if missing, unreadable or malformed."""
        try:
            text = Path(path).read_text(encoding="utf-8")
            data = json.loads(text)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            detail = str(exc).splitlines()[0] if str(exc) else ""
            raise ValueError(f"{path}: unreadable ({type(exc).__name__}: {detail})") from None
        return cls.from_json(data, source=str(path))


def _unknown_json(unknown: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    return [{"kernel": kernel, "reason": why} for kernel, why in unknown]


def _unknown_from_json(raw: Any, source: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, list) or not all(
        isinstance(u, Mapping)
        and isinstance(u.get("kernel"), str)
        and isinstance(u.get("reason"), str)
        for u in raw
    ):
        raise ValueError(f"{source}: unknown must be a list of {{kernel, reason}} strings")
    return tuple((u["kernel"], u["reason"]) for u in raw)


def _read_metadata(path: Path) -> dict[str, Any]:
    """The sibling ``<name>.json`` metadata, or ``{}`` when absent or not a valid JSON object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def scan_cache(
    root: str | os.PathLike[str],
    nodebug: NodebugFn | None = None,
    *,
    triton_version: str | None = None,
    only: Collection[str] | None = None,
) -> IrReport:
    """Fingerprint every ``.ttgir`` under a Triton cache root, skipping ``tmp.*`` directories
    (with ``only``: those of its paths, relative to the root, only).

    The text hashed is ``nodebug(path)`` when that callable is given and returns a string (method
    ``nodebug``), else the file's text through :func:`strip_locations` (method ``stripped``).
    Every other stage file beside the ``.ttgir`` is hashed too (:func:`.ir_stages.hash_stages`:
    the other MLIR stages by the same method, LLVM IR, PTX/AMDGCN and ELF binaries with debug
    info removed) into the entry's ``stages``.
    ``num_warps``/``num_stages``/``num_ctas`` come from the sibling ``<name>.json`` when present and
    valid. ``triton_version`` defaults to the one recorded in those ``.json`` files (several
    distinct versions are joined with ``","`` so that comparisons see them). Entries are sorted by
    path. An unreadable ``.ttgir`` raises ``ValueError``.
    """
    base = Path(root)
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("tmp."))
        found.extend(Path(dirpath) / f for f in filenames if f.endswith(TTGIR_SUFFIX))
    if only is not None:
        keep = set(only)
        found = [p for p in found if p.relative_to(base).as_posix() in keep]
    entries: list[IrEntry] = []
    versions: set[str] = set()
    for path in sorted(found, key=lambda p: p.relative_to(base).as_posix()):
        entry, version = file_entry(path, path.relative_to(base).as_posix(), nodebug)
        entries.append(entry)
        if version is not None:
            versions.add(version)
    if triton_version is None and versions:
        triton_version = ",".join(sorted(versions))
    frozen = tuple(entries)
    default = "nodebug" if nodebug is not None else "stripped"
    return IrReport(frozen, report_method(frozen, default), triton_version)


def file_entry(
    path: Path, rel: str, nodebug: NodebugFn | None = None
) -> tuple[IrEntry, str | None]:
    """The entry of one ``.ttgir`` file of a cache (``rel``: its path from the cache root), with
    every stage beside it, and the Triton version its ``.json`` names (:func:`scan_cache`)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: unreadable ({type(exc).__name__})") from None
    method, text, stages = hash_stages(path, raw, nodebug)
    meta = _read_metadata(path.with_name(path.name[: -len(TTGIR_SUFFIX)] + ".json"))
    version = meta.get("triton_version")
    entry = IrEntry(
        path=rel,
        kernel=kernel_name(path.name),
        hash=text_hash(text),
        method=method,
        convert_layout=count_convert_layout(text),
        num_warps=_int_or_none(meta.get("num_warps")),
        num_stages=_int_or_none(meta.get("num_stages")),
        num_ctas=_int_or_none(meta.get("num_ctas")),
        signature=specialisation_key(text),
        stages=tuple((name, stages[name]) for name in stage_order(stages)),
    )
    return entry, version if isinstance(version, str) else None


@dataclass(frozen=True)
class IrDiff:
    """How two runs' TTGIR fingerprints differ (the IR columns of ``screen.tsv``)."""

    kernels_a: int
    kernels_b: int
    kernels_changed: tuple[str, ...]
    convert_layout_a: int
    convert_layout_b: int
    #: the changed kernels whose every specialisation present on both sides compiled to the
    #: same variants: only the *set* of specialisations differs, which follows from runtime
    #: values rather than from a compiler switch (known only when every entry has a signature)
    specialisation_only: tuple[str, ...] = ()
    #: the stage-by-stage comparison (first differing stage, and its kernels): a switch acting
    #: below TTGIR leaves ``kernels_changed`` empty and shows here only. Not part of equality,
    #: which stays that of the TTGIR summary above.
    stages: StageDiff | None = field(default=None, compare=False)

    @property
    def changed(self) -> bool:
        return bool(self.kernels_changed)


def _by_signature(entries: tuple[IrEntry, ...], kernel: str) -> dict[str, list[str]] | None:
    out: dict[str, list[str]] = {}
    for e in entries:
        if e.kernel != kernel:
            continue
        if e.signature is None:
            return None
        out.setdefault(e.signature, []).append(e.hash)
    return {k: sorted(v) for k, v in out.items()}


def specialisation_only(a: IrReport, b: IrReport, kernel: str) -> bool:
    """Whether ``kernel``'s change between ``a`` and ``b`` is a different set of
    specialisations with no shared specialisation compiled differently."""
    sa, sb = _by_signature(a.entries, kernel), _by_signature(b.entries, kernel)
    if sa is None or sb is None:
        return False
    shared = sa.keys() & sb.keys()
    return bool(shared) and all(sa[k] == sb[k] for k in shared) and sa.keys() != sb.keys()


def compare(a: IrReport, b: IrReport) -> IrDiff:
    """Compare two fingerprints kernel by kernel.

    A kernel counts as changed when its multiset of TTGIR variant hashes differs, including a
    kernel present on one side only. ``stages`` holds :func:`compare_stages`: use it to tell
    whether the runs compiled identical code at every stage. Raises ``ValueError`` when the
    hashes are not comparable (:func:`check_comparable`).
    """
    check_comparable(a, b)
    fa, fb = a.fingerprint(), b.fingerprint()
    changed = tuple(sorted(k for k in fa.keys() | fb.keys() if fa.get(k) != fb.get(k)))
    return IrDiff(
        kernels_a=len(fa),
        kernels_b=len(fb),
        kernels_changed=changed,
        convert_layout_a=a.convert_layout_total(),
        convert_layout_b=b.convert_layout_total(),
        specialisation_only=tuple(k for k in changed if specialisation_only(a, b, k)),
        stages=compare_stages(a, b),
    )
