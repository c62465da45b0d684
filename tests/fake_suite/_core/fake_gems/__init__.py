"""A CPU stand-in for FlagGems (the real package needs a GPU to import).

Imported as ``flag_gems``: each layout's ``src/flag_gems`` puts this module in its place.

What the benchmark suite and pytest-zlbench touch: ``vendor_name``, ``device``, ``use_gems``, and a
few FlagGems-side operators. ``use_gems()`` works like the real one: on entry it registers
candidate implementations for aten operators on the CPU dispatch key in a fresh
``torch.library.Library("aten", "IMPL")`` and destroys that library on exit, so the *same*
``torch_op`` callable runs a different implementation inside the context. Every candidate call is
counted in ``call_counts`` (tests can check which side ran); ``active()`` says whether a
``use_gems`` context is open.

Environment: ``FAKE_GEMS_VENDOR`` (default ``arm``, the only real vendor whose device is the CPU).
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator

import torch

__version__ = "0.0.0+fake"
vendor_name: str = os.environ.get("FAKE_GEMS_VENDOR", "arm")
device: str = "cpu"

#: FlagGems op name → number of calls that reached the candidate implementation.
call_counts: dict[str, int] = {}
_depth = 0


def active() -> bool:
    """True inside a ``use_gems`` context."""
    return _depth > 0


def _count(name: str) -> None:
    call_counts[name] = call_counts.get(name, 0) + 1


# Candidates. Each avoids the aten operator it replaces (and every other replaced one), or it
# would recurse into itself while the override library is active.


def abs(x: torch.Tensor) -> torch.Tensor:  # FlagGems exports flag_gems.abs
    _count("abs")
    return torch.where(x < 0, torch.rsub(x, 0), x)


def abs_(x: torch.Tensor) -> torch.Tensor:
    _count("abs_")
    return x.copy_(torch.where(x < 0, torch.rsub(x, 0), x))


def neg(x: torch.Tensor) -> torch.Tensor:
    _count("neg")
    return torch.rsub(x, 0)


def mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    _count("mul")
    zero = torch.zeros((), dtype=torch.result_type(a, b), device=a.device)
    return torch.addcmul(zero, a, b)


def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    _count("mm")
    return torch.addmm(torch.zeros((), dtype=a.dtype, device=a.device), a, b, beta=0)


def nonzero(x: torch.Tensor) -> torch.Tensor:
    """Indices of non-zero elements; reads the count back to the host (a host synchronisation)."""
    _count("nonzero")
    flat = (x != 0).reshape(-1)
    count = int(flat.sum())
    order = torch.argsort(flat.logical_not().to(torch.int8), stable=True)[:count]
    coords = []
    for size in reversed(x.shape):
        coords.append(torch.remainder(order, size))
        order = torch.div(order, size, rounding_mode="floor")
    if not coords:
        return torch.zeros((count, 0), dtype=torch.long, device=x.device)
    return torch.stack(coords[::-1], dim=1)


_TWIDDLES: dict[tuple[int, torch.dtype], torch.Tensor] = {}


def fft(x: torch.Tensor) -> torch.Tensor:
    """1-D DFT over the last dimension as a matrix product (``flag_gems.fft`` is not an aten
    override; the benchmark passes it with ``set_gems``)."""
    _count("fft")
    n = x.shape[-1]
    key = (n, x.dtype)
    if key not in _TWIDDLES:
        k = torch.arange(n, dtype=torch.float64)
        angle = -2.0 * math.pi * torch.outer(k, k) / n
        _TWIDDLES[key] = torch.polar(torch.ones_like(angle), angle).to(x.dtype)
    return x @ _TWIDDLES[key].to(x.device)


#: FlagGems op name → (aten schema name, candidate), as ``use_gems`` registers them.
_ATEN_OVERRIDES: dict[str, tuple[str, Callable[..., torch.Tensor]]] = {
    "abs": ("abs", abs),
    "abs_": ("abs_", abs_),
    "neg": ("neg", neg),
    "mul": ("mul.Tensor", mul),
    "mm": ("mm", mm),
    "nonzero": ("nonzero", nonzero),
}


def all_registered_ops() -> list[str]:
    return list(_ATEN_OVERRIDES)


@contextlib.contextmanager
def use_gems(
    exclude: Iterable[str] | None = None,
    include: Iterable[str] | None = None,
    record: bool = False,
    path: str | None = None,
) -> Iterator[None]:
    """Dispatch the aten operators FlagGems implements to the candidates while the context is
    open. ``include`` keeps only the named ops, ``exclude`` drops the named ones."""
    global _depth
    del record, path  # accepted for signature compatibility; the fake logs nothing
    names = [
        name
        for name in _ATEN_OVERRIDES
        if (include is None or name in set(include))
        and (exclude is None or name not in set(exclude))
    ]
    lib = torch.library.Library("aten", "IMPL")
    try:
        with warnings.catch_warnings():
            # "Overriding a previously registered kernel": that is the point here.
            warnings.simplefilter("ignore")
            for name in names:
                schema, fn = _ATEN_OVERRIDES[name]
                lib.impl(schema, fn, "CPU")
        _depth += 1
        try:
            yield
        finally:
            _depth -= 1
    finally:
        lib._destroy()
