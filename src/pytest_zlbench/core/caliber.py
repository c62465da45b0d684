"""Comparing two run identities before their rows may be compared."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .records import CALIBER_FIELDS, RunIdentity

PREFIX = "!!! [caliber]"


@dataclass(frozen=True)
class CaliberProblem:
    """One reason two runs are not comparable (``fatal``) or need a caveat (not fatal)."""

    field: str
    message: str
    fatal: bool = True

    def line(self) -> str:
        return f"{PREFIX} {self.message}" if self.fatal else f"[caliber] warning: {self.message}"


def is_fatal(line: str) -> bool:
    """Whether a printed :meth:`CaliberProblem.line` is a refusal (not a warning): the lines
    travel as text (xdist reports, screen notes), and this reads them back."""
    return line.startswith(PREFIX)


def refusing(lines: Iterable[str], allow: bool) -> bool:
    """Any refusal among ``lines`` stops the comparison unless allowed."""
    return not allow and any(map(is_fatal, lines))


def check(
    a: RunIdentity, b: RunIdentity, label_a: str = "A", label_b: str = "B"
) -> list[CaliberProblem]:
    """Every caliber mismatch between two identities, then the autotune-mode rule, then the
    shared-tuner-cache caveat. An empty list means comparable without caveat."""
    problems: list[CaliberProblem] = []
    for name in CALIBER_FIELDS:
        va, vb = getattr(a, name), getattr(b, name)
        if va != vb:
            problems.append(
                CaliberProblem(name, f"{name} differs: {label_a}={va!r} {label_b}={vb!r}")
            )
    if a.autotune_mode == "record" and b.autotune_mode == "record":
        problems.append(
            CaliberProblem(
                "autotune_mode",
                "autotune_mode is record on both sides: each side tuned its own configs, so the "
                "delta mixes tuning with the switch (replay one side from the other's recording)",
            )
        )
    for ident, label in ((a, label_a), (b, label_b)):
        if ident.tuner_cache == "shared":
            problems.append(
                CaliberProblem(
                    "tuner_cache",
                    f"{label} used a shared tuner cache: relative conclusions hold, absolute "
                    "latencies are not quotable",
                    fatal=False,
                )
            )
            break
    return problems


def unreadable(label: str, message: str) -> CaliberProblem:
    return CaliberProblem("run_identity", f"{label}: {message}")
