"""``--zl-shard=K/N`` applied where the screen groups its items into operators: this part keeps
its operators (``core.shard``) and reports the other parts' items as deselected.
``--zl-shard-from=ROOT`` balances the parts by the operators' cost records in ROOT (an earlier
screen of the same suite, a merged one included: ``core.shard.COST_FILE``)."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import pytest

from .. import _common
from ..core import records
from ..core import shard as core_shard

T = TypeVar("T")


def shard_of(config: pytest.Config) -> tuple[int, int] | None:
    """``--zl-shard`` parsed; ``None`` when the screen is not split."""
    shard: tuple[int, int] | None = _common.value(config, "zl_shard")
    return shard


def operator_costs(root: Path, damaged: list[str] | None = None) -> dict[str, float]:
    """Each operator's seconds in ``root`` (an earlier screen, a merged one included), from
    its cost record (``core.shard.cost_of``); a record that cannot be read or is not that
    operator's is left out, its path added to ``damaged``."""
    costs: dict[str, float] = {}
    for path in sorted(root.glob(f"*/{core_shard.COST_FILE}")):
        seconds = core_shard.cost_of(records.read_json_object(path), path.parent.name)
        if seconds is None:
            if damaged is not None:
                damaged.append(str(path))
            continue
        costs[path.parent.name] = seconds
    return costs


def costs_of(config: pytest.Config, damaged: list[str] | None = None) -> dict[str, float] | None:
    """The per-operator costs ``--zl-shard-from`` names (each operator's cost record,
    ``core.shard.COST_FILE`` in its folder, :func:`operator_costs`); ``None`` without
    it. A record that cannot be read is left out (the operator counts at the others' median),
    its path added to ``damaged``; a root with none that can be read is refused."""
    value = _common.raw(config, "zl_shard_from")
    if not value:
        return None
    root = Path(str(value))
    if not root.is_dir():
        raise pytest.UsageError(f"--zl-shard-from {root}: no such screen root")
    costs = operator_costs(root, damaged)
    if not costs:
        raise pytest.UsageError(
            f"--zl-shard-from {root}: holds no operator costs ({core_shard.COST_FILE} in its "
            "operators' folders)"
        )
    return costs


def damaged_note(config: pytest.Config, damaged: list[str]) -> str:
    """The line that says which cost records ``--zl-shard-from`` left out."""
    more = f" and {len(damaged) - 1} more" if len(damaged) > 1 else ""
    return (
        f"--zl-shard-from {_common.raw(config, 'zl_shard_from')}: {damaged[0]}{more} "
        "unreadable, left out (those operators count at the median cost)"
    )


def checked_shard(config: pytest.Config) -> str | None:
    """``--zl-shard`` as ``K/N`` for ``screen.json``, after checking it and ``--zl-shard-from``
    (at configure time: a bad value is refused before anything runs)."""
    shard = shard_of(config)
    if shard is None:
        if _common.raw(config, "zl_shard_from"):
            raise pytest.UsageError("--zl-shard-from balances a split screen: give --zl-shard=K/N")
        return None
    costs_of(config)
    return f"{shard[0]}/{shard[1]}"


def apply_shard(
    config: pytest.Config, groups: dict[str, list[T]], notes: list[str] | None = None
) -> dict[str, list[T]]:
    """``groups`` (operator → its items) restricted to this part's operators; the items of the
    other parts are reported through ``pytest_deselected``. Unchanged without ``--zl-shard``.
    ``notes``: where a line says which cost records were left out (:func:`costs_of`)."""
    shard = shard_of(config)
    if shard is None:
        return groups
    damaged: list[str] = []
    keep = core_shard.select(groups, shard, costs_of(config, damaged))
    if damaged and notes is not None:
        notes.append(damaged_note(config, damaged))
    dropped = [item for op, members in groups.items() if op not in keep for item in members]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    return {op: members for op, members in groups.items() if op in keep}
