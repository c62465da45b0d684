from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_zlbench.core.parsing import (
    TIMER_CHOICES,
    Switch,
    parse_bool,
    parse_devices,
    parse_positive_float,
    parse_positive_int,
    parse_switch,
    parse_timer,
    switches_env,
)

# --------------------------------------------------------------------------------------------
# --zl-devices


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", ("0",)),
        ("0,1", ("0", "1")),
        ("0,1,3", ("0", "1", "3")),
        (" 2 , 5 ", ("2", "5")),
        ("10", ("10",)),
        ("GPU-8f2e6a1c-0b7d-4c2a-9e11-3f5d2c7b9a01", ("GPU-8f2e6a1c-0b7d-4c2a-9e11-3f5d2c7b9a01",)),
        ("MIG-GPU-abc/1/0", ("MIG-GPU-abc/1/0",)),
        ("0,GPU-abc", ("0", "GPU-abc")),
    ],
)
def test_parse_devices_accepts(text: str, expected: tuple[str, ...]) -> None:
    assert parse_devices(text) == expected


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("0,,1", "''"),
        ("0,", "''"),
        (",0", "''"),
        ("a", "'a'"),
        ("-1", "'-1'"),
        ("1.5", "'1.5'"),
        ("0;1", "'0;1'"),
        ("0 1", "'0 1'"),
        ("cuda:0", "'cuda:0'"),
        ("0,1,0", "listed twice"),
        ("GPU-", "'GPU-'"),
    ],
)
def test_parse_devices_refuses(text: str, needle: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_devices(text)
    message = str(info.value)
    assert "--zl-devices" in message
    assert needle in message
    assert "\n" not in message


@settings(max_examples=300, database=None, deadline=None)
@given(st.text())
def test_parse_devices_never_crashes(text: str) -> None:
    try:
        tokens = parse_devices(text)
    except ValueError as exc:
        message = str(exc)
    else:
        message = ""
        assert tokens
        assert len(set(tokens)) == len(tokens)
        assert all(t and t == t.strip() for t in tokens)
    assert "\n" not in message  # one line, whatever the input


# --------------------------------------------------------------------------------------------
# --zl-timer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("auto", "auto"),
        ("graph", "graph"),
        ("direct", "direct"),
        ("GRAPH", "graph"),
        (" Direct ", "direct"),
    ],
)
def test_parse_timer_accepts(text: str, expected: str) -> None:
    assert parse_timer(text) == expected


@pytest.mark.parametrize("text", ["", "cuda", "graphs", "cold", "direct,graph", "mixed"])
def test_parse_timer_refuses(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_timer(text)
    assert "--zl-timer" in str(info.value)
    for choice in TIMER_CHOICES:
        assert choice in str(info.value)


# --------------------------------------------------------------------------------------------
# --zl-ab


@pytest.mark.parametrize(
    ("text", "name", "spec", "env_cuda", "env_musa"),
    [
        # NAME: a FlagTree switch, the backend adds its prefix
        (
            "RLC_ENHANCE",
            "RLC_ENHANCE",
            "RLC_ENHANCE",
            ("FLAGTREE_RLC_ENHANCE", "1"),
            ("FLAGTREE_MUSA_RLC_ENHANCE", "1"),
        ),
        ("X", "X", "X", ("FLAGTREE_X", "1"), ("FLAGTREE_MUSA_X", "1")),
        (" A1_B2 ", "A1_B2", "A1_B2", ("FLAGTREE_A1_B2", "1"), ("FLAGTREE_MUSA_A1_B2", "1")),
        # VAR=VALUE: exactly that variable, whatever the backend
        (
            "DISABLE_MMA_V3=1",
            None,
            "DISABLE_MMA_V3=1",
            ("DISABLE_MMA_V3", "1"),
            ("DISABLE_MMA_V3", "1"),
        ),
        (
            "OMP_NUM_THREADS=1",
            None,
            "OMP_NUM_THREADS=1",
            ("OMP_NUM_THREADS", "1"),
            ("OMP_NUM_THREADS", "1"),
        ),
        ("lower_case=on", None, "lower_case=on", ("lower_case", "on"), ("lower_case", "on")),
        ("_X=", None, "_X=", ("_X", ""), ("_X", "")),
        ("A=b=c", None, "A=b=c", ("A", "b=c"), ("A", "b=c")),
        ("FLAGTREE_RLC=1", None, "FLAGTREE_RLC=1", ("FLAGTREE_RLC", "1"), ("FLAGTREE_RLC", "1")),
        ("PATHS=/a b:/c", None, "PATHS=/a b:/c", ("PATHS", "/a b:/c"), ("PATHS", "/a b:/c")),
    ],
)
def test_parse_switch_accepts(
    text: str,
    name: str | None,
    spec: str,
    env_cuda: tuple[str, str],
    env_musa: tuple[str, str],
) -> None:
    switch = parse_switch(text)
    assert switch == Switch(spec=spec, name=name)
    assert switch.env("FLAGTREE_") == env_cuda
    assert switch.env("FLAGTREE_MUSA_") == env_musa


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty"),
        ("  ", "empty"),
        ("rlc_enhance", "neither"),  # a NAME must be upper case
        ("Rlc", "neither"),
        ("1ABC", "neither"),
        ("RLC-ENHANCE", "neither"),
        ("RLC ENHANCE", "neither"),
        ("FLAGTREE_RLC_ENHANCE", "without the FLAGTREE_ prefix"),
        ("=1", "not a valid environment variable name"),
        ("1X=1", "not a valid environment variable name"),
        ("A-B=1", "not a valid environment variable name"),
        ("A B=1", "not a valid environment variable name"),
        ("X=a\nb", "newline or NUL"),
        ("X=a\0b", "newline or NUL"),
    ],
)
def test_parse_switch_refuses(text: str, needle: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_switch(text)
    message = str(info.value)
    assert message.startswith("--zl-ab")
    assert needle in message


@settings(max_examples=300, database=None, deadline=None)
@given(st.text())
def test_parse_switch_never_crashes(text: str) -> None:
    try:
        switch = parse_switch(text)
    except ValueError:
        return
    var, _ = switch.env("FLAGTREE_")
    assert var
    if switch.name is None:
        assert "=" in switch.spec
    else:
        assert var == "FLAGTREE_" + switch.name


def test_switches_env_merges_and_refuses_conflicts() -> None:
    a, b = parse_switch("RLC"), parse_switch("OMP_NUM_THREADS=1")
    assert switches_env((a, b), "FLAGTREE_MUSA_") == {
        "FLAGTREE_MUSA_RLC": "1",
        "OMP_NUM_THREADS": "1",
    }
    # the same setting twice is harmless
    assert switches_env((a, parse_switch("FLAGTREE_MUSA_RLC=1")), "FLAGTREE_MUSA_") == {
        "FLAGTREE_MUSA_RLC": "1"
    }
    with pytest.raises(ValueError, match="sets FLAGTREE_MUSA_RLC twice"):
        switches_env((a, parse_switch("FLAGTREE_MUSA_RLC=0")), "FLAGTREE_MUSA_")


# --------------------------------------------------------------------------------------------
# positive numbers and booleans


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", 1), ("6", 6), (" 12 ", 12), (3, 3), ("+4", 4), ("007", 7)],
)
def test_parse_positive_int_accepts(value: str | int, expected: int) -> None:
    assert parse_positive_int(value, "--zl-rounds") == expected


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("0", "at least 1"),
        ("-3", "at least 1"),
        (0, "at least 1"),
        ("", "not an integer"),
        ("two", "not an integer"),
        ("1.5", "not an integer"),
        ("1e3", "not an integer"),
    ],
)
def test_parse_positive_int_refuses(value: str | int, needle: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_positive_int(value, "--zl-rounds")
    assert str(info.value).startswith("--zl-rounds: ")
    assert needle in str(info.value)


@pytest.mark.parametrize(
    ("value", "expected"), [("1", 1.0), ("0.5", 0.5), (" 30 ", 30.0), (2.5, 2.5), ("1e2", 100.0)]
)
def test_parse_positive_float_accepts(value: str | float, expected: float) -> None:
    assert parse_positive_float(value, "--zl-timeout") == expected


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "", "soon", 0.0])
def test_parse_positive_float_refuses(value: str | float) -> None:
    with pytest.raises(ValueError) as info:
        parse_positive_float(value, "--zl-timeout")
    assert str(info.value).startswith("--zl-timeout: ")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1", True),
        ("true", True),
        ("True", True),
        ("YES", True),
        (" on ", True),
        (True, True),
        ("0", False),
        ("false", False),
        ("No", False),
        ("off", False),
        ("", False),
        (False, False),
    ],
)
def test_parse_bool(value: str | bool, expected: bool) -> None:
    assert parse_bool(value) is expected


@pytest.mark.parametrize("value", ["2", "maybe", "truee", "y", "t"])
def test_parse_bool_refuses(value: str) -> None:
    with pytest.raises(ValueError, match="not a boolean"):
        parse_bool(value)
