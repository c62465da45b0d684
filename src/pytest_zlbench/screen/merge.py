"""``zlbench merge``: the parts of a screen run in parts (``--zl-shard=K/N`` on several hosts)
joined into one root. A part is refused, in one line naming it, when its settings (switch,
rounds, backend, ...) or its caliber differ from the first part's, when it is the same shard as
another part, or when it screened an operator another part screened too."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ..contract import PROGRESS_FILE, ROUND_GLOB, SCREEN_FILE, SETTINGS_FILE
from ..core import records
from ..core.records import CALIBER_FIELDS
from ..core.result import RESULT_FILE
from ..core.rundir import GIVE_NEW, not_a_dir
from . import result_file
from .results import read_screen

#: settings that may differ between parts: where each host kept its replay, and the shard
PER_PART = ("replay_from", "shard")


class Part:
    def __init__(self, root: Path) -> None:
        self.root = root
        if not root.is_dir():
            raise pytest.UsageError(f"zlbench merge: {root}: {not_a_dir(root)}")
        if not (root / SCREEN_FILE).is_file():
            raise pytest.UsageError(
                f"zlbench merge: {root}: not a finished screen root (no {SCREEN_FILE})"
            )
        try:
            settings = json.loads((root / SETTINGS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(
                f"zlbench merge: {root}: {SETTINGS_FILE} unreadable ({type(exc).__name__})"
            ) from None
        if not isinstance(settings, dict):
            raise pytest.UsageError(f"zlbench merge: {root}: {SETTINGS_FILE} is not an object")
        self.settings: dict[str, Any] = settings
        try:
            self.lines = read_screen(root)
        except (ValueError, OSError) as exc:
            raise pytest.UsageError(f"zlbench merge: {root}: {exc}") from None
        self.op_dirs = sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob(ROUND_GLOB)))
        self.ops = {line.op for line in self.lines} | {p.name for p in self.op_dirs}
        known = [line.caliber for line in self.lines if any(line.caliber.values())]
        self.caliber = {k: known[0].get(k, "") for k in CALIBER_FIELDS} if known else None


def check(parts: Sequence[Part]) -> list[str]:
    """Refuse the first part that does not fit the ones before it; returns warning lines."""
    first = parts[0]
    shared = {k: v for k, v in first.settings.items() if k not in PER_PART}
    caliber = first.caliber
    seen: dict[str, Path] = {}
    shards: dict[str, Path] = {}
    for part in parts:
        name = part.root
        other = {k: v for k, v in part.settings.items() if k not in PER_PART}
        differ = [k for k in sorted(set(shared) | set(other)) if shared.get(k) != other.get(k)]
        if differ:
            what = ", ".join(f"{k}: {shared.get(k)!r} vs {other.get(k)!r}" for k in differ)
            raise pytest.UsageError(
                f"zlbench merge: {name}: screened with other settings than {first.root} ({what})"
            )
        if caliber is None:
            caliber = part.caliber
        elif part.caliber is not None and part.caliber != caliber:
            fields = [k for k in CALIBER_FIELDS if part.caliber[k] != caliber[k]]
            what = ", ".join(f"{k}: {caliber[k]!r} vs {part.caliber[k]!r}" for k in fields)
            raise pytest.UsageError(f"zlbench merge: {name}: caliber differs ({what})")
        shard = part.settings.get("shard")
        if shard:
            if shard in shards:
                raise pytest.UsageError(
                    f"zlbench merge: {name}: shard {shard} again (also {shards[shard]})"
                )
            shards[str(shard)] = part.root
        for op in sorted(part.ops):
            if op in seen:
                raise pytest.UsageError(
                    f"zlbench merge: {name}: screened {op}, which {seen[op]} screened too"
                )
            seen[op] = part.root
    warnings = []
    counts = {str(s).split("/")[1] for s in shards if "/" in str(s)}
    if len(counts) > 1:
        raise pytest.UsageError(f"zlbench merge: parts of different splits ({', '.join(shards)})")
    if counts:
        (n,) = counts
        missing = [f"{k}/{n}" for k in range(1, int(n) + 1) if f"{k}/{n}" not in shards]
        if missing:
            warnings.append(f"zlbench merge: shard(s) {', '.join(missing)} not given: incomplete")
    return warnings


def rejudge(target: Path, parts: Sequence[Part]) -> None:
    """Judge the finished operators of the merged screen again, together: each part judged its
    own against its own floor and false discovery rate, and one screen has one of each (as
    its first part was judged: ``--zl-fdr``, ``--zl-min-effect``). An operator whose rounds
    cannot all be read keeps the result its part gave it."""
    from ..core.judge import Judging
    from ..core.screening import judge_screen
    from .results import aggregate_op_dir, is_done, write_op_result

    done = sorted(
        d for d in target.iterdir() if d.is_dir() and is_done(d) and any(d.glob(ROUND_GLOB))
    )
    readable = []
    for op_dir in done:
        damage: list[str] = []
        result, _ = aggregate_op_dir(op_dir, require_done=True, damage=damage)
        if not damage:
            readable.append((op_dir, result))
    judging = Judging.of_document(result_file.read_result(parts[0].root))
    judged = judge_screen([r for _, r in readable], judging=judging)
    for (op_dir, _), result in zip(readable, judged, strict=True):
        write_op_result(op_dir, result)


def merge(roots: Sequence[str | Path], out: str | Path, tw: Any) -> int:
    """Join ``roots`` into ``out`` (a new or empty directory); shows the merged screen."""
    if not roots:
        raise pytest.UsageError("zlbench merge: give the screen roots to join")
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise pytest.UsageError(f"zlbench merge: -o {target}: not empty; {GIVE_NEW}")
    parts = [Part(Path(r)) for r in roots]
    warnings = check(parts)
    try:
        target.mkdir(parents=True, exist_ok=True)
        log = []
        for part in parts:
            for op_dir in part.op_dirs:
                shutil.copytree(op_dir, target / op_dir.name, symlinks=True)
            progress = part.root / PROGRESS_FILE
            log.append(f"# merged from {part.root.resolve()}\n")
            if progress.is_file():
                log.append(progress.read_text(encoding="utf-8", errors="replace"))
        records.write_atomic(target / PROGRESS_FILE, "".join(log))
        settings = dict(parts[0].settings)
        settings["shard"] = None
        settings["merged_from"] = [
            {"root": str(p.root.resolve()), "shard": p.settings.get("shard")} for p in parts
        ]
        records.write_json(target / SETTINGS_FILE, settings)
    except OSError as exc:
        raise pytest.UsageError(f"zlbench merge: -o {target}: not writable ({exc})") from None
    for part in parts:  # said, whatever the exit status
        if (part.root / RESULT_FILE).is_file():
            status = (result_file.read_result(part.root) or {}).get("status")
            if status != "complete" or result_file.killed(part.root):
                warnings.append(
                    f"zlbench merge: {part.root}: incomplete (its screen reads {status}): the "
                    "merged screen is incomplete; --zl-resume of that part finishes it"
                )
    for text in warnings:
        tw.line(text, yellow=True)
    try:
        rejudge(target, parts)
    except OSError as exc:
        raise pytest.UsageError(f"zlbench merge: -o {target}: not writable ({exc})") from None
    from .outputs import publish

    planned: dict[str, str | None] = {line.op: None for p in parts for line in p.lines}
    cut = set().union(*(result_file.cut_ops(p.root) for p in parts))  # their sessions' cuts
    unfinished = {op for op in planned if op not in cut}
    doc = result_file.update(target, planned, final=True, cut=bool(cut), failed=unfinished)
    publish(target, doc, tw, None)
    return 0
