"""``adapters.compile_env``: the installed Triton says which variables its cache key reads."""

from __future__ import annotations

import os

import pytest

from pytest_zlbench.adapters.compile_env import cache_invalidating, probe

pytestmark = pytest.mark.triton


@pytest.mark.parametrize("ask", [cache_invalidating, probe])
def test_tritons_set_is_asked_without_changing_this_process(
    ask: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("triton")
    monkeypatch.delenv("DISABLE_MMA_V3", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    found, compiler = ask({"DISABLE_MMA_V3": "1", "OMP_NUM_THREADS": "3"})  # type: ignore[operator]
    assert found == {"DISABLE_MMA_V3"}
    assert compiler.startswith("Triton 3.")
    assert "DISABLE_MMA_V3" not in os.environ
    assert os.environ["OMP_NUM_THREADS"] == "2"
