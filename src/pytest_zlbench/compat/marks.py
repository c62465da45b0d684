"""What ``zlbench.compat`` reads from collected items: the benchmark directory a test file
belongs to, and the reason and condition of its skip marks (as pytest evaluates them)."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

import pytest


def bench_dir_of(path: Path) -> Path | None:
    """The suite's benchmark directory: the nearest ancestor holding FlagGems' ``base.py``
    (current layout) or ``performance_utils.py`` (legacy), else one named ``benchmark``."""
    parents = [path.parent, *path.parent.parents]
    for parent in parents:
        if (parent / "base.py").is_file() or (parent / "performance_utils.py").is_file():
            return parent
    for parent in parents:
        if parent.name == "benchmark":
            return parent
    return None


def mark_reason(mark: pytest.Mark) -> str:
    reason = mark.kwargs.get("reason")
    if reason is None and mark.name == "skip" and mark.args:
        reason = mark.args[0]
    if reason is None:
        return "unconditional skip" if mark.name == "skip" else ""
    return str(reason)


def condition_true(mark: pytest.Mark, item: pytest.Item) -> bool | None:
    """Whether a ``skipif`` mark skips ``item`` (``None``: a condition failed to evaluate).
    Mirrors pytest: any true condition skips; a mark without a condition skips."""
    conditions = mark.args
    if not conditions and "condition" in mark.kwargs:
        conditions = (mark.kwargs["condition"],)
    if not conditions:
        return True
    for condition in conditions:
        try:
            if isinstance(condition, str):
                namespace: dict[str, Any] = {
                    "os": os,
                    "sys": sys,
                    "platform": platform,
                    "config": item.config,
                }
                module = getattr(item, "module", None)
                if module is not None:
                    namespace.update(module.__dict__)
                value = eval(condition, namespace)
            else:
                value = condition
            if bool(value):
                return True
        except Exception:
            return None
    return False


def still_skips(item: pytest.Item) -> bool:
    return any(
        mark.name == "skip" or (mark.name == "skipif" and condition_true(mark, item) is not False)
        for mark in item.iter_markers()
    )
