"""Splitting a screen's operators over hosts (``--zl-shard=K/N``): the same assignment on every
host, so that the parts of a Slurm job array or a Kubernetes indexed job cover every operator
once and ``zlbench merge`` can join them.

The assignment depends only on the set of operator ids and on the costs given (never on the
order of collection, the host or the time): operators are taken from the most to the least
costly (ties by name) and each goes to the part with the least cost so far (ties: the lowest
part). Without costs every operator costs 1, which balances by count. An operator the costs do
not know is given their median. Pure.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping

#: a line of a screen's ``progress.log`` that ends a pass: a child run's
#: (``[zlbench gw0    12.3s] abs r1 A: ok (3.4s)``, ``mm record: exit status 1: ... (9.0s)``) or
#: a side workers' round of one operator (``op r1: A ok, B ok (0.2s) [operator 1 of 2, ...]``);
#: the cause of a failure before the seconds may hold parentheses and brackets
_CHILD_LINE = re.compile(
    r"^\[zlbench[^\]]*\] (\S+) (?:record|r\d+(?: [AB])?): .*\((\d+(?:\.\d+)?)s\)"
    r"(?: \[[^\]]*\])?$"
)


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` → ``(K, N)`` with 1 ≤ K ≤ N; a ``ValueError`` naming the problem otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if not match:
        raise ValueError(f"--zl-shard {text!r}: expected K/N, e.g. 1/4")
    k, n = int(match.group(1)), int(match.group(2))
    if n < 1 or not 1 <= k <= n:
        raise ValueError(f"--zl-shard {text!r}: K must be between 1 and N (N ≥ 1)")
    return k, n


def costs_from_progress(text: str) -> dict[str, float]:
    """Seconds per operator: the sum of its child runs' durations in a ``progress.log``."""
    costs: dict[str, float] = {}
    for line in text.splitlines():
        match = _CHILD_LINE.match(line.strip())
        if match:
            op, seconds = match.group(1), float(match.group(2))
            costs[op] = costs.get(op, 0.0) + seconds
    return costs


def assign(
    ops: Iterable[str], parts: int, costs: Mapping[str, float] | None = None
) -> dict[str, int]:
    """Each operator's part, 1..``parts`` (see the module's docstring for the rule)."""
    if parts < 1:
        raise ValueError(f"parts must be ≥ 1, not {parts}")
    names = sorted(set(ops))
    known = [float(c) for op, c in (costs or {}).items() if op in names and c > 0]
    default = statistics.median(known) if known else 1.0
    cost = {op: float((costs or {}).get(op, 0.0)) or default for op in names}
    load = [0.0] * parts
    out: dict[str, int] = {}
    for op in sorted(names, key=lambda o: (-cost[o], o)):
        part = min(range(parts), key=lambda i: (load[i], i))
        load[part] += cost[op]
        out[op] = part + 1
    return out


def select(
    ops: Iterable[str], shard: tuple[int, int], costs: Mapping[str, float] | None = None
) -> set[str]:
    """The operators part ``K`` of ``N`` screens."""
    k, n = shard
    return {op for op, part in assign(ops, n, costs).items() if part == k}
