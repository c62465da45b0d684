"""adapters.device_info.describe: the card a process measures on, as a run records it, read from
a stand-in torch device module (the real one needs a card)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_zlbench.adapters import device_info
from pytest_zlbench.core.backends import BUILTIN_BACKENDS

CUDA = next(b for b in BUILTIN_BACKENDS if b.name == "cuda")


class FakeDevice:
    """What ``torch.cuda`` answers about a process's card 0 of two."""

    def __init__(self, props: Any) -> None:
        self.props = props

    def current_device(self) -> int:
        return 0

    def get_device_properties(self, index: int) -> Any:
        assert index == 0
        return self.props

    def device_count(self) -> int:
        return 2


def test_a_card_is_described_by_name_pci_bus_id_uuid_and_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    props = SimpleNamespace(
        name="NVIDIA H200", pci_domain_id=0, pci_bus_id=6, pci_device_id=0, uuid="GPU-1234"
    )
    monkeypatch.setattr(device_info, "_device_module", lambda backend: FakeDevice(props))
    monkeypatch.setenv(CUDA.visibility_var, "1")
    assert device_info.describe(CUDA) == {
        "visible": "1",
        "index": 0,
        "name": "NVIDIA H200",
        "pci_bus_id": "00000000:06:00.0",
        "uuid": "GPU-1234",
        "count": 2,
    }


def test_a_card_without_pci_ids_has_no_bus_id(monkeypatch: pytest.MonkeyPatch) -> None:
    props = SimpleNamespace(name="Some Card")
    monkeypatch.setattr(device_info, "_device_module", lambda backend: FakeDevice(props))
    monkeypatch.delenv(CUDA.visibility_var, raising=False)
    info = device_info.describe(CUDA)
    assert info == {"visible": None, "index": 0, "name": "Some Card", "count": 2}


def test_a_card_that_cannot_be_described_is_recorded_as_such(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(backend: Any) -> Any:
        raise RuntimeError("no device\nsecond line")

    monkeypatch.setattr(device_info, "_device_module", broken)
    info = device_info.describe(dataclasses.replace(CUDA, visibility_var=""))
    assert info == {
        "visible": None,
        "name": "unknown",
        "error": "RuntimeError: no device\nsecond line",
    }


def test_the_cpu_is_described_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = next(b for b in BUILTIN_BACKENDS if b.name == "cpu")
    monkeypatch.setattr(device_info, "_device_module", lambda backend: pytest.fail("torch"))
    info = device_info.describe(cpu)
    assert info["visible"] is None
    assert info["name"]


def test_the_device_module_is_torch_s_after_the_backend_s_own_import() -> None:
    torch = pytest.importorskip("torch")
    assert device_info._device_module(CUDA) is torch.cuda
    sim = dataclasses.replace(CUDA, torch_device="nosuchdevice", import_module="json")
    assert device_info._device_module(sim) is None
