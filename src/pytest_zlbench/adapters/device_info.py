"""Backend detection and card description through torch (imported lazily) or the vendor CLI."""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import shutil
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


# --------------------------------------------------------------------------------------------
# Driver, clocks and power limit (informational identity fields, never caliber)

#: each backend's tool for the card's driver, clocks and power limit; only NVIDIA's is read so
#: far, the others are recorded as ``null`` with this as the reason
STATE_TOOLS: dict[str, str] = {
    "cuda": "nvidia-smi --query-gpu=... --format=csv,noheader,nounits (or pynvml)",
    "rocm": "amd-smi static --driver --limit; amd-smi metric --clock --power (not read yet)",
    "musa": "mthreads-gmi -q (not read yet)",
    "ascend": "npu-smi info -t common -i ID; npu-smi info -t power -i ID (not read yet)",
}
#: nvidia-smi's query fields → our names (clocks in MHz, power in W)
NVIDIA_FIELDS: dict[str, str] = {
    "pci.bus_id": "pci_bus_id",
    "driver_version": "driver_version",
    "clocks.sm": "sm_clock_mhz",
    "clocks.mem": "mem_clock_mhz",
    "clocks.max.sm": "sm_clock_max_mhz",
    "clocks.max.mem": "mem_clock_max_mhz",
    "power.limit": "power_limit_w",
    "pstate": "pstate",
    "temperature.gpu": "temperature_c",
}
#: seconds nvidia-smi may take before the state is recorded as unavailable
STATE_TIMEOUT = 10.0


def _value(text: str) -> Any:
    text = text.strip()
    if not text or text.startswith("[") or text in ("N/A", "Not Supported"):
        return None  # [N/A], [Not Supported], [Unknown Error]
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() else number


def _nvidia_smi(cards: list[str]) -> dict[str, Any]:
    cmd = [
        "nvidia-smi",
        f"--query-gpu={','.join(NVIDIA_FIELDS)}",
        "--format=csv,noheader,nounits",
        "-i",
        ",".join(cards),
    ]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=STATE_TIMEOUT,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        first = (proc.stderr or proc.stdout).strip().splitlines() or [""]
        raise RuntimeError(f"nvidia-smi exit status {proc.returncode}: {first[0][:200]}")
    out = []
    for line in proc.stdout.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(NVIDIA_FIELDS):
            raise RuntimeError(f"nvidia-smi: unexpected line {line[:120]!r}")
        out.append({name: _value(c) for name, c in zip(NVIDIA_FIELDS.values(), cells, strict=True)})
    if not out:
        raise RuntimeError("nvidia-smi printed no card")
    return {"tool": "nvidia-smi", "cards": out}


def _pynvml(cards: list[str]) -> dict[str, Any]:
    import pynvml

    pynvml.nvmlInit()
    try:
        out = []
        for card in cards:
            if card.isdigit():
                handle = pynvml.nvmlDeviceGetHandleByIndex(int(card))
            elif card.startswith(("GPU-", "MIG-")):
                handle = pynvml.nvmlDeviceGetHandleByUUID(card)
            else:
                handle = pynvml.nvmlDeviceGetHandleByPciBusId(card)
            driver = pynvml.nvmlSystemGetDriverVersion()
            pci = pynvml.nvmlDeviceGetPciInfo(handle).busId
            out.append(
                {
                    "pci_bus_id": pci.decode() if isinstance(pci, bytes) else str(pci),
                    "driver_version": driver.decode() if isinstance(driver, bytes) else driver,
                    "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                    "mem_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
                    "sm_clock_max_mhz": pynvml.nvmlDeviceGetMaxClockInfo(
                        handle, pynvml.NVML_CLOCK_SM
                    ),
                    "mem_clock_max_mhz": pynvml.nvmlDeviceGetMaxClockInfo(
                        handle, pynvml.NVML_CLOCK_MEM
                    ),
                    "power_limit_w": pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000.0,
                    "pstate": f"P{pynvml.nvmlDeviceGetPerformanceState(handle)}",
                    "temperature_c": pynvml.nvmlDeviceGetTemperature(
                        handle, pynvml.NVML_TEMPERATURE_GPU
                    ),
                }
            )
        return {"tool": "pynvml", "cards": out}
    finally:
        pynvml.nvmlShutdown()


def device_state(backend: str, cards: list[str]) -> dict[str, Any]:
    """Driver version, SM/memory clocks and power limit of ``cards`` (ids the vendor tool
    accepts: index, UUID or PCI bus id) as ``{"tool", "cards": [...]}``; where the backend's
    tool is not read, missing or fails: ``{"tool": None, "reason": ...}``. Never raises."""
    if backend not in ("cuda",):
        tool = STATE_TOOLS.get(backend)
        reason = f"{backend} backend: not read" + (f" (its tool: {tool})" if tool else " (no card)")
        return {"tool": None, "reason": reason}
    try:
        if shutil.which("nvidia-smi"):
            return _nvidia_smi(cards or ["0"])
        if importlib.util.find_spec("pynvml") is not None:
            return _pynvml(cards or ["0"])
        return {"tool": None, "reason": "neither nvidia-smi on PATH nor pynvml importable"}
    except Exception as exc:  # a fact we cannot read is recorded as such, never fatal
        first = (str(exc).splitlines() or [""])[0]
        return {"tool": None, "reason": f"{type(exc).__name__}: {first}"}
