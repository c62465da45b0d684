"""Whether a screen's switch was live: did it reach side B's processes, and did it change any
generated code (pure: no pytest, torch or triton).

A switch that the installed compiler does not read (a ``FLAGTREE_*`` variable on upstream Triton,
a variable renamed in a later version) still runs every round and fills a table with numbers
that show no difference. Nothing in one operator's result says so; the screen as a whole can:
when no operator's IR changed at any stage, its result says it in one line
(:func:`liveness`), naming the compiler its side workers loaded. Where nothing reached the
compiler at all (every operator ``NO_TRITON``: nothing compiled on either side) the line says
that instead: identical IR there would blame a switch that was never put to the test.

Each side's run records, in its identity, the switch variables as its process saw them at
start-up (:data:`SEEN_FIELD`) and the compiler it would import (:data:`COMPILER_FIELD`);
:class:`Observed` gathers them over a screen's runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .verdicts import IR_CHANGED, NO_IR_DIFF, NO_TRITON, SPECIALISATION_ONLY

#: identity field: the switch variables as the run saw them when it started, ``{name: value}``
#: (``None``: unset); side B's should be the switch's values and side A's unset
SEEN_FIELD = "switch_seen"
#: identity field: ``{"name": "Triton" | "FlagTree", "version"}`` of the compiler the run loads
COMPILER_FIELD = "compiler"
#: upstream Triton reads no variable of this prefix; FlagTree's switches all have it
FLAGTREE_PREFIX = "FLAGTREE_"


def compiler_text(compiler: Mapping[str, Any] | None) -> str:
    """``Triton 3.6.0``, ``FlagTree 0.5.0+3.5``, or ``compiler not recorded``."""
    if not compiler or not compiler.get("name"):
        return "compiler not recorded"
    version = compiler.get("version")
    return f"{compiler['name']} {version}" if version else str(compiler["name"])


def unseen(side: str, switch: Mapping[str, str], seen: Mapping[str, Any]) -> list[str]:
    """The switch variables a run of ``side`` (``A`` or ``B``) did not see as the screen set
    them: side B must see each at the switch's value, side A must see none. A variable its
    record does not list (a run of an earlier version) is not judged."""
    wrong = []
    for name, value in switch.items():
        if name not in seen:
            continue
        expected = value if side == "B" else None
        if seen[name] != expected:
            shown = "unset" if seen[name] is None else f"{name}={seen[name]}"
            wanted = "unset" if expected is None else f"{name}={expected}"
            wrong.append(f"side {side} saw {shown}, not {wanted}")
    return wrong


@dataclass
class Observed:
    """What a screen's runs recorded of the compiler and of the switch as they saw it."""

    compiler: dict[str, str] | None = None
    #: a problem (``side B saw unset, not X=1``) -> the operators whose runs had it
    problems: dict[str, list[str]] = field(default_factory=dict)

    def add(self, op: str, side: str, switch: Mapping[str, str], info: Mapping[str, Any]) -> None:
        """One run's identity fields (``info``) of operator ``op``'s ``side``."""
        compiler = info.get(COMPILER_FIELD)
        if self.compiler is None and isinstance(compiler, Mapping) and compiler.get("name"):
            self.compiler = {str(k): str(v) for k, v in compiler.items()}
        seen = info.get(SEEN_FIELD)
        if isinstance(seen, Mapping):
            for problem in unseen(side, switch, seen):
                ops = self.problems.setdefault(problem, [])
                if op not in ops:
                    ops.append(op)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _count(entries: Sequence[Mapping[str, Any]], *verdicts: str) -> int:
    return sum(1 for e in entries if e.get("verdict") in verdicts)


def liveness(
    entries: Iterable[Mapping[str, Any]],
    switch: Mapping[str, str] | None,
    observed: Observed | None = None,
) -> dict[str, Any] | None:
    """The ``liveness`` of a screen's result from its operators' entries (``OpResult.to_json``
    forms; only ``complete`` ones count) and its ``switch``; ``None`` for an A/A control or a
    comparison of two runs (no switch to check). ``line`` is the one line to show at the
    screen's end, ``None`` when some operator's IR changed and every run saw the switch."""
    if not switch:
        return None
    observed = observed if observed is not None else Observed()
    done = [e for e in entries if e.get("status") == "complete"]
    changed = _count(done, IR_CHANGED)
    same = _count(done, NO_IR_DIFF, SPECIALISATION_ONLY)
    partial = sum(1 for e in done if e.get("verdict") == NO_IR_DIFF and not e.get("ir_complete"))
    nothing = _count(done, NO_TRITON)
    compiler = compiler_text(observed.compiler)
    line = None
    if observed.problems:
        problem, ops = next(iter(observed.problems.items()))
        more = len(observed.problems) - 1
        line = (
            f"the switch did not reach every side: {problem} in {_plural(len(ops), 'operator')}"
            f" ({', '.join(ops[:3])}{', ...' if len(ops) > 3 else ''})"
            + (f"; {more} more such" if more else "")
        )
    elif not changed and same:
        line = (
            f"the switch changed no generated code in {_plural(same, 'operator')}: check that "
            f"this compiler reads it ({compiler})"
        )
        if partial:
            line += f"; {partial} of them compared at some IR stages only"
        if nothing:
            line += f"; {_plural(nothing, 'operator')} compiled nothing"
    elif not changed and nothing:
        line = (
            f"nothing reached the compiler in {_plural(nothing, 'operator')}: no Triton kernel "
            "compiled on either side, so their numbers are the machine's, or the switch's effect "
            "outside Triton; whether the compiler reads the switch was not tested"
            + (f" ({compiler})" if observed.compiler else "")
        )
    names = sorted(switch)
    flagtree = [n for n in names if n.startswith(FLAGTREE_PREFIX)]
    if line is not None and flagtree and (observed.compiler or {}).get("name") == "Triton":
        line += f"; upstream Triton ignores {', '.join(flagtree)} (FlagTree is not installed)"
    return {
        "compiler": observed.compiler,
        "switch": names,
        "operators": {
            "ir_changed": changed,
            "no_ir_diff": same,
            "no_ir_diff_partial": partial,
            "no_triton": nothing,
        },
        "not_seen": [{"problem": p, "ops": ops} for p, ops in observed.problems.items()],
        "line": line,
    }
