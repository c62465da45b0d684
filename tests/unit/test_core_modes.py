"""``core.modes``: which way ``--zl-screen-mode=auto`` runs a screen's two sides."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_zlbench.core.modes import choose_mode, compile_switches, load_compile_switches

TRITON_SET = frozenset({"DISABLE_MMA_V3"})


def choose(
    env: dict[str, str], found: frozenset[str] | None = frozenset(), **kw: Any
) -> tuple[str, str]:
    mode, reason = choose_mode(env, flagtree_prefix="FLAGTREE_", compiler_set=found, **kw)
    return mode, reason


def test_a_variable_read_at_import_runs_the_sides_in_two_processes_in_lockstep() -> None:
    mode, reason = choose({"OMP_NUM_THREADS": "1"})
    assert mode == "lockstep"
    assert reason.startswith("OMP_NUM_THREADS is in neither Triton's cache-invalidating set")
    assert "each side runs in its own process" in reason


def test_a_variable_of_the_compilers_cache_key_runs_both_sides_in_one_process() -> None:
    mode, reason = choose({"DISABLE_MMA_V3": "1"}, TRITON_SET, compiler="Triton 3.6.0")
    assert mode == "one-process"
    assert reason == (
        "DISABLE_MMA_V3 is in Triton 3.6.0's cache-invalidating set: read when kernels "
        "compile, so one process times both"
    )


def test_a_flagtree_switch_and_a_listed_variable_run_in_one_process() -> None:
    mode, reason = choose(
        {"FLAGTREE_RLC_ENHANCE": "1", "MY_PASS": "on"}, frozenset(), listed={"MY_PASS"}
    )
    assert mode == "one-process"
    assert "FLAGTREE_RLC_ENHANCE is a FlagTree switch" in reason
    assert "MY_PASS is listed in ops/compile_switches.yaml" in reason


def test_one_variable_read_at_import_among_compile_time_ones_needs_two_processes() -> None:
    mode, reason = choose({"DISABLE_MMA_V3": "1", "PYTHONPATH": "/other/triton"}, TRITON_SET)
    assert mode == "lockstep"
    assert reason.startswith("PYTHONPATH ")


def test_without_a_compiler_that_can_say_only_flagtree_and_listed_switches_share_a_process() -> (
    None
):
    assert choose({"DISABLE_MMA_V3": "1"}, None)[0] == "lockstep"
    assert (
        "in no cache-invalidating set (none could be read: Triton)"
        in choose({"DISABLE_MMA_V3": "1"}, None)[1]
    )
    assert choose({"FLAGTREE_X": "1"}, None)[0] == "one-process"


def test_an_aa_control_runs_in_one_process_and_shared_inputs_ask_for_lockstep() -> None:
    assert choose({})[0] == "one-process"
    assert choose({"DISABLE_MMA_V3": "1"}, TRITON_SET, shared_inputs=True)[0] == "lockstep"


def test_the_packaged_list_reads_and_a_malformed_one_is_one_line() -> None:
    assert "TRITON_DEFAULT_FP_FUSION" in compile_switches()
    assert load_compile_switches("schema: 1\nvariables: [A, {name: B, why: x}]\n") == {"A", "B"}
    for bad in ("schema: 2\n", "[1]\n", "schema: 1\nvariables: [{why: x}]\n", "a: [\n"):
        with pytest.raises(ValueError, match=r"^compile_switches.yaml: ") as info:
            load_compile_switches(bad)
        assert "\n" not in str(info.value)
