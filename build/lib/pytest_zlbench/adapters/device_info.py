"""Backend detection and card description through torch (imported lazily) or the vendor CLI."""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import subprocess
from typing import Any

from ..core.backends import Backend


def detect_backend_name(probe_device: bool = True) -> str:
    """The backend of the installed torch: musa/ascend when their torch extension is installed,
    rocm for a HIP build, cuda for a CUDA build with a visible device, else cpu.

    With ``probe_device=False`` no device call is made at all (a CUDA build counts as cuda):
    the device runtime reads the visibility variable once, at its first call, so card pinning
    must happen before any probe. Importing torch initialises no device."""
    if importlib.util.find_spec("torch") is None:
        return "cpu"
    if importlib.util.find_spec("torch_musa") is not None:
        return "musa"
    if importlib.util.find_spec("torch_npu") is not None:
        return "ascend"
    import torch

    if getattr(torch.version, "hip", None):
        return "rocm"
    if getattr(torch.version, "cuda", None) and (not probe_device or torch.cuda.is_available()):
        return "cuda"
    return "cpu"


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _device_module(backend: Backend) -> Any:
    if backend.import_module:
        importlib.import_module(backend.import_module)
    import torch

    return getattr(torch, backend.torch_device, None)


def describe(backend: Backend) -> dict[str, Any]:
    """Name, PCI bus id and index of the card this process uses (card 0 of its visible set)."""
    visible = os.environ.get(backend.visibility_var) if backend.visibility_var else None
    if backend.name == "cpu":
        return {"name": cpu_name(), "visible": None}
    info: dict[str, Any] = {"visible": visible}
    try:
        module = _device_module(backend)
        index = module.current_device()
        props = module.get_device_properties(index)
        info["index"] = index
        info["name"] = str(getattr(props, "name", "unknown"))
        bus = [getattr(props, k, None) for k in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
        if all(isinstance(v, int) for v in bus):
            info["pci_bus_id"] = f"{bus[0]:08X}:{bus[1]:02X}:{bus[2]:02X}.0"
        uuid = getattr(props, "uuid", None)
        if uuid is not None:
            info["uuid"] = str(uuid)
        info["count"] = module.device_count()
    except Exception as exc:  # a card we cannot describe is recorded as such, not fatal
        info.setdefault("name", "unknown")
        info["error"] = f"{type(exc).__name__}: {exc}"
    return info


def enumerate_cards(backend: Backend) -> list[str]:
    """One line per card: through torch first, the vendor CLI as a fallback."""
    try:
        module = _device_module(backend)
        count = module.device_count()
        return [f"{i}: {module.get_device_name(i)}" for i in range(count)]
    except Exception:
        pass
    if backend.list_cmd:
        try:
            out = subprocess.run(
                backend.list_cmd, capture_output=True, text=True, timeout=20, check=True
            )
            return [line for line in out.stdout.splitlines() if line.strip()]
        except (OSError, subprocess.SubprocessError):
            pass
    return []
