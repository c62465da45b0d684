"""Device backends: names, aliases, visibility variables, capabilities (pure data)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Backend:
    """What pytest-zlbench needs to know about one kind of device.

    :param name: canonical name used on the command line and in run identities.
    :param torch_device: the torch device string (``cuda`` also on ROCm).
    :param torch_module: the torch sub-module with the device API (``torch.cuda``).
    :param import_module: a module that must be imported to make the device appear in torch
        (``torch_musa``, ``torch_npu``), or ``""``.
    :param visibility_var: the variable that restricts which cards a process sees.
    :param graph_capture: whether device-graph capture works, so ``--zl-timer=auto`` picks graph.
    :param vendor: FlagGems' ``vendor_name`` for this backend.
    :param flagtree_prefix: the prefix of this backend's FlagTree switches (``FLAGTREE_MUSA_``).
    :param list_cmd: the vendor CLI that enumerates cards when torch cannot.
    :param compat: names of the ``ops/compat/<name>.yaml`` override files that apply.
    """

    name: str
    torch_device: str
    torch_module: str
    visibility_var: str
    graph_capture: bool
    vendor: str
    flagtree_prefix: str
    import_module: str = ""
    list_cmd: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    compat: tuple[str, ...] = ()

    @property
    def default_timer(self) -> str:
        return "graph" if self.graph_capture else "direct"


# The built-in backends, a table per concern, keyed by name (``BUILTIN_BACKENDS`` keeps the order).
#: name: (torch device, torch module, visibility variable, the module to import first)
_TORCH: dict[str, tuple[str, str, str, str]] = {
    "cuda": ("cuda", "torch.cuda", "CUDA_VISIBLE_DEVICES", ""),
    "musa": ("musa", "torch.musa", "MUSA_VISIBLE_DEVICES", "torch_musa"),
    "rocm": ("cuda", "torch.cuda", "HIP_VISIBLE_DEVICES", ""),  # ROCm's torch speaks cuda
    "ascend": ("npu", "torch.npu", "ASCEND_RT_VISIBLE_DEVICES", "torch_npu"),
    "cpu": ("cpu", "", "", ""),
}
#: name: (device-graph capture works, FlagGems vendor, FlagTree prefix, aliases)
_STACK: dict[str, tuple[bool, str, str, tuple[str, ...]]] = {
    "cuda": (True, "nvidia", "FLAGTREE_", ("nvidia",)),
    # MUSAGraph mirrors CUDA graphs, but capture of Triton-MUSA kernels is unverified: direct
    # timing until a card proves otherwise (--zl-timer=graph still tries it).
    "musa": (False, "mthreads", "FLAGTREE_MUSA_", ("mthreads", "mt")),
    # the default FlagTree build serves NVIDIA and AMD
    "rocm": (True, "amd", "FLAGTREE_", ("amd", "hip")),
    "ascend": (False, "ascend", "FLAGTREE_ASCEND_", ("npu", "huawei")),
    "cpu": (False, "arm", "FLAGTREE_CPU_", ()),
}
#: name: the vendor CLI that enumerates the cards when torch cannot
_LIST_CMD: dict[str, tuple[str, ...]] = {
    "cuda": ("nvidia-smi", "--query-gpu=index,name,pci.bus_id", "--format=csv,noheader"),
    "musa": ("mthreads-gmi", "-L"),
    "rocm": ("amd-smi", "list"),
    "ascend": ("npu-smi", "info", "-l"),
}
#: name: the ``ops/compat/<name>.yaml`` override files that apply
_COMPAT: dict[str, tuple[str, ...]] = {"musa": ("musa",)}


def _builtin(name: str) -> Backend:
    device, module, visibility, import_module = _TORCH[name]
    graph, vendor, prefix, aliases = _STACK[name]
    return Backend(
        name,
        device,
        module,
        visibility,
        graph,
        vendor,
        prefix,
        import_module=import_module,
        list_cmd=_LIST_CMD.get(name, ()),
        aliases=aliases,
        compat=_COMPAT.get(name, ()),
    )


BUILTIN_BACKENDS: tuple[Backend, ...] = tuple(_builtin(name) for name in _TORCH)


class BackendRegistry:
    """Backends by name and alias. Plugins and conftests add more through
    ``pytest_zlbench_device_register``."""

    def __init__(self, backends: Iterable[Backend] = BUILTIN_BACKENDS) -> None:
        self._by_name: dict[str, Backend] = {}
        self._alias: dict[str, str] = {}
        for backend in backends:
            self.add(backend)

    def add(self, backend: Backend) -> None:
        key = backend.name.lower()
        if not key or not key.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"backend name {backend.name!r} must be alphanumeric")
        for alias in (key, *(a.lower() for a in backend.aliases)):
            owner = self._alias.get(alias)
            if owner is not None and owner != key:
                raise ValueError(f"backend alias {alias!r} already names backend {owner!r}")
        self._by_name[key] = backend
        self._alias[key] = key
        for alias in backend.aliases:
            self._alias[alias.lower()] = key

    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def aliases(self) -> Mapping[str, str]:
        return dict(self._alias)

    def resolve(self, name: str) -> Backend:
        key = self._alias.get(name.strip().lower())
        if key is None:
            raise ValueError(
                f"unknown backend {name!r}; valid: {', '.join(self.names())} "
                f"(aliases: {', '.join(a for a in self._alias if a not in self._by_name)})"
            )
        return self._by_name[key]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip().lower() in self._alias
