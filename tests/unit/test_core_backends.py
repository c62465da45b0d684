from __future__ import annotations

import dataclasses

import pytest

from pytest_zlbench.core.backends import BUILTIN_BACKENDS, Backend, BackendRegistry

CANONICAL = ("cuda", "musa", "rocm", "ascend", "cpu")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("cuda", "cuda"),
        ("musa", "musa"),
        ("rocm", "rocm"),
        ("ascend", "ascend"),
        ("cpu", "cpu"),
        ("nvidia", "cuda"),
        ("mthreads", "musa"),
        ("mt", "musa"),
        ("amd", "rocm"),
        ("hip", "rocm"),
        ("npu", "ascend"),
        ("huawei", "ascend"),
        # case-insensitive, surrounding blanks ignored
        ("CUDA", "cuda"),
        ("Nvidia", "cuda"),
        ("MT", "musa"),
        ("MThreads", "musa"),
        ("HIP", "rocm"),
        ("AMD", "rocm"),
        ("NPU", "ascend"),
        ("Huawei", "ascend"),
        ("  cpu ", "cpu"),
        ("CPU", "cpu"),
    ],
)
def test_every_name_and_alias_resolves(name: str, expected: str) -> None:
    registry = BackendRegistry()
    assert registry.resolve(name).name == expected
    assert name in registry


@pytest.mark.parametrize("name", ["bogus", "", "gpu", "cuda0", "xpu", "nvidia-smi", "mlu"])
def test_unknown_backend_lists_the_valid_names(name: str) -> None:
    registry = BackendRegistry()
    with pytest.raises(ValueError) as info:
        registry.resolve(name)
    message = str(info.value)
    assert "\n" not in message
    assert repr(name) in message
    for valid in CANONICAL:
        assert valid in message
    assert name not in registry


def test_builtin_names_and_visibility_variables() -> None:
    registry = BackendRegistry()
    assert registry.names() == CANONICAL
    variables = {name: registry.resolve(name).visibility_var for name in CANONICAL}
    assert variables == {
        "cuda": "CUDA_VISIBLE_DEVICES",
        "musa": "MUSA_VISIBLE_DEVICES",
        "rocm": "HIP_VISIBLE_DEVICES",
        "ascend": "ASCEND_RT_VISIBLE_DEVICES",
        "cpu": "",
    }


@pytest.mark.parametrize(
    ("name", "timer"),
    [
        ("cuda", "graph"),
        ("rocm", "graph"),
        ("musa", "direct"),
        ("ascend", "direct"),
        ("cpu", "direct"),
    ],
)
def test_default_timer(name: str, timer: str) -> None:
    assert BackendRegistry().resolve(name).default_timer == timer


def test_builtins_are_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        BUILTIN_BACKENDS[0].name = "x"  # type: ignore[misc]


def _xpu(**changes: object) -> Backend:
    fields: dict[str, object] = {
        "name": "xpu",
        "torch_device": "xpu",
        "torch_module": "torch.xpu",
        "visibility_var": "ZE_AFFINITY_MASK",
        "graph_capture": False,
        "vendor": "intel",
        "flagtree_prefix": "FLAGTREE_XPU_",
        "aliases": ("intel", "Arc"),
    }
    fields.update(changes)
    return Backend(**fields)  # type: ignore[arg-type]


def test_add_a_new_backend() -> None:
    registry = BackendRegistry()
    registry.add(_xpu())
    assert registry.names() == (*CANONICAL, "xpu")
    assert registry.resolve("xpu").visibility_var == "ZE_AFFINITY_MASK"
    assert registry.resolve("INTEL").name == "xpu"
    assert registry.resolve("arc").name == "xpu"
    assert registry.aliases()["arc"] == "xpu"
    with pytest.raises(ValueError, match="unknown backend 'intel'"):
        BackendRegistry().resolve("intel")  # registries do not share state
    # the new name appears in the refusal message of its own registry
    with pytest.raises(ValueError, match="xpu"):
        registry.resolve("bogus")


def test_re_adding_a_backend_replaces_it() -> None:
    registry = BackendRegistry()
    registry.add(_xpu())
    registry.add(_xpu(vendor="intel2"))
    assert registry.resolve("intel").vendor == "intel2"
    assert registry.names().count("xpu") == 1


@pytest.mark.parametrize(
    ("backend", "needle"),
    [
        (_xpu(aliases=("nvidia",)), "'nvidia' already names backend 'cuda'"),
        (_xpu(aliases=("MT",)), "'mt' already names backend 'musa'"),
        (_xpu(name="hip", aliases=()), "'hip' already names backend 'rocm'"),
        (_xpu(name="Huawei", aliases=()), "'huawei' already names backend 'ascend'"),
    ],
)
def test_alias_collision_is_refused(backend: Backend, needle: str) -> None:
    registry = BackendRegistry()
    with pytest.raises(ValueError) as info:
        registry.add(backend)
    assert needle in str(info.value)
    # nothing half-added
    assert registry.names() == CANONICAL
    assert registry.resolve("nvidia").name == "cuda"


@pytest.mark.parametrize("name", ["", "my backend", "a/b", "x.y"])
def test_bad_backend_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="alphanumeric"):
        BackendRegistry().add(_xpu(name=name))


def test_contains_rejects_non_strings() -> None:
    registry = BackendRegistry()
    assert 1 not in registry
    assert None not in registry
