"""core.options: every ``--zl-*`` option declared once, in one table, and the session's values
parsed once into one frozen settings object."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytest_zlbench.core import options
from pytest_zlbench.core.options import BY_DEST, OPTIONS, Settings

SRC = Path(__file__).resolve().parents[2] / "src" / "pytest_zlbench"


def test_each_option_is_one_entry() -> None:
    flags = [o.flag for o in OPTIONS]
    assert len(flags) == len(set(flags))
    assert all(flag.startswith("--zl-") for flag in flags)
    assert {o.plugin for o in OPTIONS} == {"ab", "compat", "device", "identity", "timing"}


def test_only_the_option_table_adds_options_to_pytest() -> None:
    """``addoption``/``addini`` of a ``--zl-*`` option appear once in src/: in
    ``_common.add_options``, which reads the table; no plugin declares one of its own."""
    calls = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("addoption", "addini")
            ):
                calls.append(path.relative_to(SRC).as_posix())
    assert set(calls) == {"_common.py"}


def test_a_setting_is_its_parsed_value_or_its_default() -> None:
    settings = Settings({"zl_rounds": ("3", False), "zl_ab": (["X", "A=1"], False)})
    assert settings.value("zl_rounds") == 3
    assert [s.spec for s in settings.value("zl_ab")] == ["X", "A=1"]
    assert settings.value("zl_batch_size") == options.BATCH_SIZE
    assert settings.value("zl_timer") == "auto"
    assert settings.raw("zl_rounds") == "3"
    assert settings.raw("zl_timer") is None
    assert settings.mode(child=False) == options.SCREEN


def test_the_settings_are_frozen() -> None:
    settings = Settings({})
    with pytest.raises(AttributeError, match="frozen"):
        settings._values = {}  # type: ignore[misc]


def test_a_bad_value_is_refused_by_the_option_or_its_ini_key() -> None:
    with pytest.raises(ValueError, match=r"^--zl-rounds: must be at least 1, got 0$"):
        Settings({"zl_rounds": ("0", False)})
    with pytest.raises(ValueError, match=r"^zl_rounds = 0 \(ini\): must be at least 1, got 0$"):
        Settings({"zl_rounds": ("0", True)})
    settings = Settings({"zl_floor_from": ("aa", True), "zl_out": ("o", False)})
    assert settings.named("zl_floor_from") == "zl_floor_from (ini)"
    assert settings.named("zl_out") == "--zl-out"


def test_an_option_that_acts_in_some_modes_says_what_it_is_for() -> None:
    for option in OPTIONS:
        if option.acts_in is not None:
            assert option.purpose, option.flag
    assert BY_DEST["zl_timeout"].acts_in == frozenset({options.SCREEN})


def test_the_idle_options_of_a_session_are_read_from_its_settings() -> None:
    settings = Settings({"zl_timeout": ("5", False), "zl_out": ("o", False)})
    assert [dest for dest, _ in settings.idle(child=False)] == ["zl_timeout"]
    assert settings.idle(child=True) == []
