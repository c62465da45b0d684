"""A screen's progress while it waits for a long child run (issue 18): a heartbeat at least
every 10 s that names what is running."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest


def test_a_long_child_run_says_it_is_still_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_zlbench.screen import children

    said: list[str] = []
    config = SimpleNamespace(
        invocation_params=SimpleNamespace(dir=tmp_path, args=()),
        args=[],
        pluginmanager=SimpleNamespace(hasplugin=lambda name: False),
    )
    settings = SimpleNamespace(timeout=None, limit=lambda side: None, env_b={}, root=tmp_path)
    kids = children.Children(config, settings, said.append)  # type: ignore[arg-type]
    kids.heartbeat = 0.2
    monkeypatch.setattr(
        kids, "cmd", lambda *a: [sys.executable, "-c", "import time; time.sleep(1.5)"]
    )
    kids.run("mm", [], tmp_path / "mm" / "record", "record", 0, None)
    beats = [s for s in said if "running" in s]
    assert beats, said
    assert beats[0].startswith("mm record: running, ")
    assert "(pid " in beats[0]
    assert said[-1].startswith("mm record: child finished without a complete run directory")
