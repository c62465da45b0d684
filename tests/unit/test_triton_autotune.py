"""Pinning plain ``triton.autotune`` choices: real Triton ``Autotuner`` objects, whose tuning
step (which needs a GPU) is replaced by a stand-in that picks a config and counts each tuning."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_zlbench.adapters import triton_autotune
from pytest_zlbench.core.autotune import (
    Pin,
    merge_pins,
    pins_from_json,
    pins_to_json,
)

triton = pytest.importorskip("triton")
pytestmark = pytest.mark.triton

from triton.runtime.autotuner import Autotuner  # noqa: E402

CONFIGS = [
    {"BLOCK": 32, "num_warps": 4},
    {"BLOCK": 64, "num_warps": 4},
    {"BLOCK": 128, "num_warps": 8},
]


def make_kernel(configs: list[dict[str, int]] = CONFIGS) -> Any:
    import triton.language as tl

    @triton.autotune(
        configs=[triton.Config({"BLOCK": c["BLOCK"]}, num_warps=c["num_warps"]) for c in configs],
        key=["n"],
    )
    @triton.jit
    def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2, mask=offs < n)

    return scale_kernel


@pytest.fixture
def tunings(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Any, ...]]]:
    """Autotuner.run without a GPU: a key not in the cache is 'tuned' (the largest block wins)
    and counted; then the chosen config is returned instead of launching."""
    tuned: list[tuple[Any, ...]] = []

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        named = {**dict(zip(self.arg_names, args, strict=False)), **kwargs}
        key = tuple(named[k] for k in self.keys)
        if key not in self.cache:
            tuned.append(key)
            self.cache[key] = self.configs[-1]
        return self.cache[key]

    monkeypatch.setattr(Autotuner, "run", run)
    yield tuned
    triton_autotune.uninstall()


def test_a_recording_notes_each_tuned_key_once(tunings: list[tuple[Any, ...]]) -> None:
    assert triton_autotune.install({})
    kernel = make_kernel()
    kernel.run(None, 1000)
    kernel.run(None, 1000)  # cached: not tuned again, not recorded again
    kernel.run(None, 24)
    assert tunings == [(1000,), (24,)]
    recorded = triton_autotune.drain()
    name = triton_autotune.kernel_name(kernel)
    assert name.endswith("make_kernel.<locals>.scale_kernel")
    assert [(k, key, i) for k, key, i, _ in recorded] == [(name, "(1000,)", 2), (name, "(24,)", 2)]
    assert recorded[0][3] == str(kernel.configs[2])
    assert triton_autotune.drain() == []


def test_a_replay_tunes_only_what_the_recording_lacks(tunings: list[tuple[Any, ...]]) -> None:
    assert triton_autotune.install({})
    make_kernel().run(None, 1000)
    pins: dict[str, dict[str, Pin]] = {}
    merge_pins(pins, triton_autotune.drain())
    pins = pins_from_json(json.loads(json.dumps(pins_to_json(pins))))  # through autotune.json
    # a later process: a fresh kernel object, the recording pre-loaded
    triton_autotune.uninstall()
    tunings.clear()
    assert triton_autotune.install(pins)
    kernel = make_kernel()
    chosen = kernel.run(None, 1000)
    assert tunings == []  # the recorded key was not tuned
    assert str(chosen) == str(kernel.configs[2])
    assert triton_autotune.drain() == []
    kernel.run(None, 7)  # a key the recording lacks is tuned, and recorded for the report
    assert tunings == [(7,)]
    assert [key for _, key, _, _ in triton_autotune.drain()] == ["(7,)"]


def test_a_changed_config_list_is_tuned_again(tunings: list[tuple[Any, ...]]) -> None:
    assert triton_autotune.install({})
    make_kernel().run(None, 1000)
    pins: dict[str, dict[str, Pin]] = {}
    merge_pins(pins, triton_autotune.drain())
    triton_autotune.uninstall()
    tunings.clear()
    assert triton_autotune.install(pins)
    changed = make_kernel([{"BLOCK": 32, "num_warps": 4}, {"BLOCK": 256, "num_warps": 8}])
    changed.run(None, 1000)
    assert tunings == [(1000,)]  # position 2 no longer exists: never a wrong config


def test_subclasses_keep_their_own_pinning(tunings: list[tuple[Any, ...]]) -> None:
    """FlagGems' LibTuner subclasses Autotuner and pins through its SQLite database."""

    class LibTunerLike(Autotuner):
        pass

    assert triton_autotune.install({})
    kernel = make_kernel()
    kernel.__class__ = LibTunerLike
    kernel.run(None, 1000)
    assert tunings == [(1000,)]
    assert triton_autotune.drain() == []


def test_without_triton_imported_nothing_is_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    triton_autotune.uninstall()
    monkeypatch.setitem(sys.modules, "triton.runtime.autotuner", None)
    assert not triton_autotune.install({})
    assert not triton_autotune.installed()


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"schema": 2, "kernels": {}},
        {"schema": 1},
        {"schema": 1, "kernels": {"k": []}},
        {"schema": 1, "kernels": {"k": {"(1,)": [True, "c"]}}},
        {"schema": 1, "kernels": {"k": {"(1,)": [0]}}},
    ],
)
def test_a_malformed_pin_file_is_one_line(data: Any) -> None:
    with pytest.raises(ValueError) as excinfo:
        pins_from_json(data, "rec/autotune.json")
    assert str(excinfo.value).startswith("rec/autotune.json")
    assert "\n" not in str(excinfo.value)


def test_the_first_choice_of_a_key_wins() -> None:
    pins: dict[str, dict[str, Pin]] = {}
    assert (
        merge_pins(pins, [("k", "(1,)", 0, "a"), ("k", "(1,)", 2, "c"), ("k", "(2,)", 1, "b")]) == 2
    )
    assert pins == {"k": {"(1,)": Pin(0, "a"), "(2,)": Pin(1, "b")}}
