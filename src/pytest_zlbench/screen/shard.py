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


def costs_of(config: pytest.Config) -> dict[str, float] | None:
    """The per-operator costs ``--zl-shard-from`` names (each operator's cost record,
    ``core.shard.COST_FILE`` in its folder); ``None`` without it."""
    value = _common.raw(config, "zl_shard_from")
    if not value:
        return None
    root = Path(str(value))
    if not root.is_dir():
        raise pytest.UsageError(f"--zl-shard-from {root}: no such screen root")
    costs: dict[str, float] = {}
    for path in sorted(root.glob(f"*/{core_shard.COST_FILE}")):
        seconds = core_shard.cost_of(records.read_json_object(path), path.parent.name)
        if seconds is not None:
            costs[path.parent.name] = seconds
    if not costs:
        raise pytest.UsageError(
            f"--zl-shard-from {root}: holds no operator costs ({core_shard.COST_FILE} in its "
            "operators' folders)"
        )
    return costs


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


def apply_shard(config: pytest.Config, groups: dict[str, list[T]]) -> dict[str, list[T]]:
    """``groups`` (operator → its items) restricted to this part's operators; the items of the
    other parts are reported through ``pytest_deselected``. Unchanged without ``--zl-shard``."""
    shard = shard_of(config)
    if shard is None:
        return groups
    keep = core_shard.select(groups, shard, costs_of(config))
    dropped = [item for op, members in groups.items() if op not in keep for item in members]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    return {op: members for op, members in groups.items() if op in keep}
