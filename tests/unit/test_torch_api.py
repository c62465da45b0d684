"""``TorchDeviceAPI``'s generator isolation against stand-ins for torch's modules."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_zlbench.adapters.torch_api import TorchDeviceAPI


class Gen:
    """A device generator: ``state`` is the object a capture would register."""

    def __init__(self, graphsafe: bool = True) -> None:
        self.state: Any = "original"
        self.graphsafe = graphsafe
        self.copies = 0

    def graphsafe_get_state(self) -> Any:
        if not self.graphsafe:
            raise RuntimeError("graphsafe_get_state is not implemented for this generator")
        return self.state

    def graphsafe_set_state(self, state: Any) -> None:
        self.state = state

    def clone_state(self) -> Any:
        self.copies += 1
        return f"copy{self.copies}"


def api_with(generators: tuple[Gen, ...]) -> tuple[TorchDeviceAPI, dict[str, Any]]:
    calls: dict[str, Any] = {"cpu": [], "device": []}
    api = object.__new__(TorchDeviceAPI)
    api.torch = SimpleNamespace(  # type: ignore[assignment]
        get_rng_state=lambda: "cpu-state", set_rng_state=calls["cpu"].append
    )
    api.m = SimpleNamespace(
        default_generators=generators,
        current_device=lambda: 0,
        get_rng_state=lambda: "device-value",
        set_rng_state=calls["device"].append,
    )
    return api, calls


def test_a_capture_sees_a_copy_and_the_original_comes_back() -> None:
    gen = Gen()
    api, calls = api_with((gen,))
    token = api.isolate_rng()
    assert gen.state == "copy1"  # what the capture registers
    api.restore_rng(token)
    assert gen.state == "original"
    assert calls == {"cpu": ["cpu-state"], "device": []}


@pytest.mark.parametrize("generators", [(Gen(graphsafe=False),), ()], ids=["no-graphsafe", "none"])
def test_without_graph_safe_states_the_value_is_restored(generators: tuple[Gen, ...]) -> None:
    api, calls = api_with(generators)
    api.restore_rng(api.isolate_rng())
    assert calls == {"cpu": ["cpu-state"], "device": ["device-value"]}


class AcceleratorError(RuntimeError):
    """Like ``torch.AcceleratorError`` (torch >= 2.8): the CUDA error code as an attribute."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.error_code = code


def test_the_error_code_is_read_from_the_exception_not_its_text() -> None:
    api = object.__new__(TorchDeviceAPI)
    assert api.error_code(AcceleratorError("CUDA error: an illegal memory access", 700)) == 700
    # newer torch appends hints about device-side assertions to every CUDA error: the text
    # never decides
    hint = RuntimeError("CUDA error: invalid argument\nCompile with `TORCH_USE_CUDA_DSA`")
    assert api.error_code(hint) is None
    odd = AcceleratorError("x", 700)
    odd.error_code = "700"  # type: ignore[assignment]
    assert api.error_code(odd) is None


@pytest.mark.parametrize(("grad", "inference"), [(True, False), (False, False), (False, True)])
def test_the_capture_thread_enters_the_caller_s_device_and_autograd_modes(
    grad: bool, inference: bool
) -> None:
    """torch keeps the current device, grad mode and inference mode per thread (real torch
    here, on the CPU; the device module is a stand-in)."""
    torch = pytest.importorskip("torch")
    devices: list[int] = []
    api = object.__new__(TorchDeviceAPI)
    api.torch = torch
    api.m = SimpleNamespace(current_device=lambda: 1, set_device=devices.append)
    with torch.inference_mode(inference), torch.set_grad_enabled(grad):
        enter = api.thread_context()
    seen: list[tuple[bool, bool]] = []

    def run() -> None:
        with enter():
            seen.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
        seen.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [(grad, inference), (True, False)]  # and a thread's own defaults after
    assert devices == [1]


def test_the_capture_thread_enters_the_caller_s_default_device_and_autocast() -> None:
    """``torch.set_default_device`` and autocast are per thread too: a capture on a thread
    without them would record other work than the eager calls ran (real torch, on the CPU)."""
    torch = pytest.importorskip("torch")
    api = object.__new__(TorchDeviceAPI)
    api.torch = torch
    api.device = "cpu"  # the backend's device type, for autocast
    api.m = SimpleNamespace(current_device=lambda: 0, set_device=lambda index: None)
    with torch.device("meta"), torch.autocast("cpu", dtype=torch.bfloat16):
        enter = api.thread_context()
    seen: list[tuple[str, bool, Any]] = []

    def look() -> None:
        seen.append(
            (
                torch.empty(1).device.type,
                torch.is_autocast_enabled("cpu"),
                torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else None,
            )
        )

    def run() -> None:
        look()
        with enter():
            look()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [("cpu", False, None), ("meta", True, torch.bfloat16)]
