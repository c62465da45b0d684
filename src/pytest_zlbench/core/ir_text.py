"""Normalisers for the files of a Triton cache entry (pure: no pytest, torch or triton).

Each one removes what differs between two compiles of the same code in two processes: source
locations and debug info, which carry the kernel file's absolute path and line numbers.
Nothing else differed between two fresh processes with different
``TRITON_CACHE_DIR``, kernel directories and ``PYTHONHASHSEED`` (Triton 3.6, sm_90 and gfx942):
no timestamps, PIDs, hashes or random names.

* MLIR (``.source``, ``.ttir``, ``.ttgir``): :func:`strip_locations`, or Triton's own re-parse
  without debug info (``adapters.triton_ir.nodebug_text``).
* LLVM IR (``.llir``): :func:`normalise_llvm_ir`.
* Assembly (``.ptx``, ``.amdgcn``): :func:`normalise_asm`.
* ELF code objects (``.cubin``, ``.hsaco``): :func:`elf_digest`.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Callable


def text_hash(text: str) -> str:
    """SHA-256 hex digest of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- MLIR -----------------------------------------------------------------------------------------

_LOC_OPEN = "loc("
# What the location scan stops at: a string literal (skipped whole) or a possible location.
_TOKEN = re.compile(r'"|loc\(')


def _skip_string(line: str, i: int) -> int:
    """Index just past the string literal whose opening quote is at ``line[i]``."""
    i += 1
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            return i + 1
        i += 1
    return i


def _loc_end(line: str, open_paren: int) -> int:
    """Index just past the parenthesis balancing ``line[open_paren]`` (``len(line)`` if none)."""
    depth = 0
    i = open_paren
    while i < len(line):
        ch = line[i]
        if ch == '"':
            i = _skip_string(line, i)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _strip_line(line: str) -> str:
    if _LOC_OPEN not in line:
        return line
    out: list[str] = []
    start = 0  # start of the not-yet-copied part of the line
    i = 0
    while (match := _TOKEN.search(line, i)) is not None:
        j = match.start()
        if line[j] == '"':
            i = _skip_string(line, j)
        elif j == 0 or line[j - 1] in " \t":
            cut = j
            while cut > start and line[cut - 1] in " \t":
                cut -= 1
            out.append(line[start:cut])
            i = start = _loc_end(line, j + len(_LOC_OPEN) - 1)
        else:
            i = j + 1
    out.append(line[start:])
    return "".join(out)


def strip_locations(text: str) -> str:
    """Remove every MLIR location from TTGIR text.

    Drops ``#loc`` alias lines and every `` loc(...)`` span, found with a balanced-parenthesis scan
    that ignores parentheses inside string literals (locations nest, occur mid-line and inside
    block- and function-argument lists). Trailing whitespace and empty lines are removed; the
    result ends with a newline unless it is empty.
    """
    lines: list[str] = []
    for raw in text.splitlines():
        if raw.startswith("#loc"):
            continue
        line = _strip_line(raw).rstrip()
        if line:
            lines.append(line)
    return "".join(line + "\n" for line in lines)


# -- text helpers ---------------------------------------------------------------------------------


def _code_pattern(comment: str) -> re.Pattern[str]:
    """The longest line prefix without ``comment`` outside double-quoted strings."""
    head, rest = re.escape(comment[0]), re.escape(comment[1:])
    other = f"|{head}(?!{rest})" if rest else ""
    return re.compile(f'(?:[^"{head}]{other}|"[^"]*"?)*')


_CODE = {c: _code_pattern(c) for c in (";", "//")}


def _code_part(line: str, comment: str) -> str:
    """``line`` up to its comment (``comment`` outside a double-quoted string), right-stripped.

    LLVM IR, PTX and AMDGCN strings escape quotes as hex (``\\22``), so a quote always toggles.
    """
    if '"' not in line:
        cut = line.find(comment)
        return (line if cut < 0 else line[:cut]).rstrip()
    pattern = _CODE.get(comment) or _code_pattern(comment)
    match = pattern.match(line)
    return (match.group(0) if match else line).rstrip()


def _outside_strings(line: str, fn: Callable[[str], str]) -> str:
    """``line`` with ``fn`` applied to every part outside double-quoted strings."""
    parts = line.split('"')
    return '"'.join(fn(p) if i % 2 == 0 else p for i, p in enumerate(parts))


# -- LLVM IR --------------------------------------------------------------------------------------

_DBG_ATTACHMENT = re.compile(r",? !dbg !\d+")
_MD_DEF = re.compile(r"^!(\d+) = ")
_MD_REF = re.compile(r"(,\s*)?!(\d+)\b")
_DEBUG_NODE = re.compile(r"^!\d+ = (?:distinct )?!(?:DI|\{[^}]*!\"Debug Info Version\")")


def _is_llvm_debug_line(line: str) -> bool:
    stripped = line.lstrip()
    return (
        stripped.startswith(("#dbg_", "!llvm.dbg."))
        or "@llvm.dbg." in stripped  # intrinsic calls and declarations of the old debug form
        or _DEBUG_NODE.match(stripped) is not None
    )


def normalise_llvm_ir(text: str) -> str:
    """LLVM IR without debug info, comments or gaps in metadata numbering.

    Removes ``!dbg`` attachments, debug records and intrinsics, ``!DI*`` metadata nodes (which
    hold the source path and line numbers), the "Debug Info Version" module flag and comments;
    then drops metadata nodes no longer reachable from the code or named metadata, drops
    references to removed nodes, and renumbers the remaining nodes ``!0..!N`` in order.
    """
    kept: list[str] = []
    dropped: set[str] = set()
    for raw in text.splitlines():
        line = _code_part(raw, ";")
        if not line:
            continue
        if _is_llvm_debug_line(line):
            if (m := _MD_DEF.match(line)) is not None:
                dropped.add(m.group(1))
            continue
        if "!dbg" in line:
            line = _outside_strings(line, lambda s: _DBG_ATTACHMENT.sub("", s))
        kept.append(line)
    defs = {m.group(1): line for line in kept if (m := _MD_DEF.match(line)) is not None}

    def refs(line: str) -> set[str]:
        if "!" not in line:
            return set()
        parts = line.split('"')[::2]  # outside strings
        return {m.group(2) for part in parts for m in _MD_REF.finditer(part)}

    reachable: set[str] = set()
    todo = [r for line in kept if not _MD_DEF.match(line) for r in refs(line)]
    while todo:
        ref = todo.pop()
        if ref in reachable or ref not in defs:
            continue
        reachable.add(ref)
        todo.extend(refs(defs[ref].split(" = ", 1)[1]))
    order = [n for n in defs if n in reachable]
    number = {old: str(new) for new, old in enumerate(order)}
    dropped |= defs.keys() - reachable

    def renumber(s: str) -> str:
        def one(m: re.Match[str]) -> str:
            if m.group(2) in dropped or m.group(2) not in number:
                return ""
            return f"{m.group(1) or ''}!{number[m.group(2)]}"

        return _MD_REF.sub(one, s).replace("{, ", "{")

    out: list[str] = []
    for line in kept:
        m = _MD_DEF.match(line)
        if m is not None and m.group(1) not in reachable:
            continue
        out.append(_outside_strings(line, renumber) if "!" in line else line)
    return "".join(line + "\n" for line in out)


# -- assembly (PTX, AMDGCN) -----------------------------------------------------------------------

_DEBUG_DIRECTIVES = (".file", ".loc", ".cfi_")
# labels only debug sections refer to (PTX ``$L__tmp0``, AMDGCN ``.Ltmp0``)
_DEBUG_LABEL = re.compile(r"^(?:\$L__tmp|\.Ltmp)\d+:$")
_SECTION_SWITCH = (".section", ".text", ".data", ".bss", ".rodata", ".previous", ".popsection")
_WHITESPACE = re.compile(r"\s+")


def _is_debug_section(line: str) -> bool:
    words = line.replace(",", " ").split()
    return len(words) > 1 and words[0] == ".section" and words[1].strip('"').startswith(".debug")


def normalise_asm(text: str, comment: str) -> str:
    """Assembly text (PTX with ``comment="//"``, AMDGCN with ``";"``) without debug info.

    Removes comments, ``.file``/``.loc``/``.cfi_*`` directives, labels that only debug info
    refers to, and every ``.debug*`` section: a PTX section is its ``{ ... }`` block, an AMDGCN one
    runs to the next section-switching directive. Whitespace runs become one space.
    """
    out: list[str] = []
    skipping = False
    depth = 0
    opened = False
    for raw in text.splitlines():
        line = _WHITESPACE.sub(" ", _code_part(raw, comment)).strip()
        if skipping:
            depth += line.count("{") - line.count("}")
            opened = opened or "{" in line
            if opened and depth <= 0:
                skipping = False
                continue
            if opened or not line.startswith(_SECTION_SWITCH) or _is_debug_section(line):
                continue
            skipping = False
        if _is_debug_section(line):
            skipping, depth = True, line.count("{") - line.count("}")
            opened = "{" in line
            if opened and depth <= 0:  # ``.section .debug_macinfo { }`` on one line
                skipping = False
            continue
        if not line or line.startswith(_DEBUG_DIRECTIVES) or _DEBUG_LABEL.match(line):
            continue
        out.append(line)
    return "".join(line + "\n" for line in out)


# -- ELF code objects (cubin, hsaco) --------------------------------------------------------------

_SHT_NOBITS = 8
_DEBUG_SECTION = re.compile(r"^\.(?:rela?)?\.?(?:debug|nv_debug)")


def elf_digest(data: bytes) -> str | None:
    """SHA-256 over a 64-bit little-endian ELF's sections other than debug info.

    Hashes, per section in file order, its name, type, flags, size and (unless ``NOBITS``) bytes,
    leaving out ``.debug*``, ``.nv_debug*`` and their relocation sections (source paths and line
    tables) and ``.shstrtab`` (names are hashed per section). ``None`` for anything that is not a
    well-formed ELF64 LE file: such a stage is left out rather than hashed raw.
    """
    try:
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            return None
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        headers = [
            struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)
        ]
        names_at = headers[shstrndx][4]
        digest = hashlib.sha256()
        for name_off, kind, flags, _addr, offset, size, *_ in headers:
            start = names_at + name_off
            name = data[start : data.index(b"\0", start)].decode("ascii")
            if name == ".shstrtab" or _DEBUG_SECTION.match(name):
                continue
            body = b"" if kind == _SHT_NOBITS else data[offset : offset + size]
            if len(body) != (0 if kind == _SHT_NOBITS else size):
                return None
            digest.update(f"{name}\0{kind}\0{flags}\0{size}\0".encode())
            digest.update(body)
        return digest.hexdigest()
    except (struct.error, IndexError, ValueError, UnicodeDecodeError):
        return None
