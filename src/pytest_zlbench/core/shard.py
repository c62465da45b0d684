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

#: an operator's cost record, in its folder of a screen root: the seconds its passes took
COST_FILE = "cost.json"
COST_SCHEMA = 1


def cost_record(op: str, seconds: float) -> dict[str, object]:
    """The typed record of ``op``'s cost: the seconds of every pass it ran in this session
    (child runs and side-worker passes, failed ones and retries included)."""
    return {"schema": COST_SCHEMA, "op": op, "seconds": round(max(seconds, 0.0), 3)}


def cost_of(record: object, op: str) -> float | None:
    """The seconds a cost record of ``op`` holds; ``None`` for anything else (another schema,
    another operator, no number)."""
    if not isinstance(record, dict) or record.get("schema") != COST_SCHEMA:
        return None
    seconds = record.get("seconds")
    if record.get("op") != op or isinstance(seconds, bool):
        return None
    return float(seconds) if isinstance(seconds, int | float) and seconds >= 0 else None


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` → ``(K, N)`` with 1 ≤ K ≤ N; a ``ValueError`` naming the problem otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if not match:
        raise ValueError(f"--zl-shard {text!r}: expected K/N, e.g. 1/4")
    k, n = int(match.group(1)), int(match.group(2))
    if n < 1 or not 1 <= k <= n:
        raise ValueError(f"--zl-shard {text!r}: K must be between 1 and N (N ≥ 1)")
    return k, n


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
