"""The screen's pytest items: one :class:`OpItem` per operator, whose run asks the screen's
engine to measure it (``screen.engine``) and reports its one line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..core import screening
from .operator import Operator

if TYPE_CHECKING:
    from .engine import ScreenEngine


class OpItem(pytest.Item):
    """One operator of the screen (:attr:`operator`, what the engine measures)."""

    def __init__(
        self,
        *,
        op: str,
        nodeids: list[str],
        engine: ScreenEngine,
        members: list[str] | None = None,
        **kw: Any,
    ):
        super().__init__(**kw)
        self.operator = Operator(op, nodeids, members if members is not None else list(nodeids))
        self.engine = engine
        self.add_marker(pytest.mark.xdist_group(op))

    @property
    def op(self) -> str:
        return self.operator.op

    @property
    def nodeids(self) -> list[str]:
        return self.operator.nodeids

    def runtest(self) -> None:
        result = self.engine.run_op(self.operator)
        fact = self.operator.unwritable
        if fact is not None:  # cut: the session's end tells, in one line
            self.user_properties.append(("zl_unwritable", fact.to_json()))
            if fact.stopped:  # the screen's own file: no operator after it can be kept
                self.session.shouldstop = fact.text()
            return
        self.user_properties.append(("zl_screen", result.to_line().to_json()))
        if self.operator.caliber_lines:
            self.user_properties.append(("zl_caliber", list(self.operator.caliber_lines)))
        if result.rounds_failed:
            raise OpFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, OpFailed):
            return "\n".join(excinfo.value.result.notes)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"zlbench A/B {self.op}"


class OpFailed(Exception):
    def __init__(self, result: screening.OpResult) -> None:
        super().__init__(result.op)
        self.result = result
