"""Shared inputs (``--zl-shared-inputs``): the two sides of a lockstep screen time each call on
its inputs copied into one block of device memory that both side processes map.

On an H200 a microsecond kernel's duration depends on where its inputs sit in physical memory,
by up to 4 % over pages, each placement repeatable to 0.1 %; two live processes cannot share an
allocation, so each side of a round reads a placement of its own, a steady offset between the
sides that no number of replays removes. Two processes timing the same physical memory read the
same duration to a median of 0.03-0.12 % per placement (at most 0.37 %), where each on its own
memory reads up to 1.5 % apart (docs/PERFORMANCE.md, "Where the inputs sit").

* :class:`SharedPool` is the block: the side that starts first in a round allocates it and
  publishes it in a file (CUDA IPC; on the CPU a memory-mapped file), the other side maps it.
* :meth:`SharedPool.place` lays out a call's input storages in the block from its start, one
  after the other, each in a slot of whole :data:`ALIGN` steps that depends on the storages'
  sizes only (both sides lay out the same call alike), at its own address modulo :data:`KEEP`
  (Triton specialises a kernel on its pointers' divisibility by 16: the timed graph runs the
  kernel the private inputs compiled). Views and aliases of one storage stay views of one copy,
  with their offsets and strides. It returns a :class:`Placement`.
* :class:`Placement` is what the graph timer uses: ``fn`` calls the op on the shared copies (the
  timed graph is captured on it) and ``load()`` copies this side's input values in. The timer
  loads at the start of each of its turns, so the values a side times are its own, and never
  replays the shared graph outside a turn (turns of the two sides never overlap).

Only the timed graph reads the block; warm-up, primers and the direct timer use the private
inputs. A call whose input storages do not fit is timed on its private inputs.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: the block's size; a call whose input storages need more is timed on its private inputs
POOL_BYTES = 256 << 20
#: each storage's copy starts on a multiple of this (the caching allocator's block alignment)
ALIGN = 512
#: ... plus the storage's own address modulo this (the pointer divisibility compilers see)
KEEP = 16
#: how long the side that maps the block waits for the other side to publish it
WAIT_S = 120.0


class Placement:
    """One call's inputs in the shared block: ``fn()`` calls the op on them, ``load()`` copies
    this side's values in (one device copy per input storage)."""

    def __init__(self, fn: Callable[[], Any], copies: list[tuple[Any, Any]]) -> None:
        self.fn = fn
        self._copies = copies  # (destination in the block, source storage), both uint8

    @property
    def storages(self) -> int:
        return len(self._copies)

    def load(self) -> None:
        for dst, src in self._copies:
            dst.copy_(src)


def _bytes_of(torch: Any, storage: Any, device: Any) -> Any:
    return torch.empty(0, dtype=torch.uint8, device=device).set_(storage)


def _walk(value: Any, visit: Callable[[Any], Any]) -> Any:
    """``value`` with every tensor in it (inside lists, tuples, named tuples and dicts) replaced
    by ``visit(tensor)``."""
    if isinstance(value, list):
        return [_walk(v, visit) for v in value]
    if isinstance(value, tuple):
        items = [_walk(v, visit) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return {k: _walk(v, visit) for k, v in value.items()}
    return visit(value)


class SharedPool:
    """The block of one side worker: ``owner`` allocates and publishes it at ``path``, the other
    side maps it from there (:meth:`open`, before each operator, or on first use).

    On a card both sides then agree whether they share, before either places a call: the first
    to decide creates ``path.decided`` (``on`` once the other side mapped the block, ``off`` and
    why when either side gave up), and the other follows what it says; the owner waits for it.
    A side that does not share says why in :attr:`broken` and times on its own inputs, and so
    does the other one. ``handshake`` (default: on any device but the CPU, whose block is one
    file both processes map) turns the agreement on."""

    def __init__(
        self, path: Path, owner: bool, wait_s: float = WAIT_S, handshake: bool | None = None
    ) -> None:
        self.path = path
        self.decided = path.with_name(path.name + ".decided")
        self.owner = owner
        self.wait_s = wait_s
        self.handshake = handshake
        self.broken: str | None = None
        #: why the last call that was not placed was not
        self.unplaced: str | None = None
        self._block: Any = None

    def open(self, torch: Any, device: Any) -> None:
        """Make or map the block now, and agree with the other side (a no-op once done)."""
        self.block(torch, device)

    def block(self, torch: Any, device: Any) -> Any:
        if self._block is None and self.broken is None:
            agree = self.handshake if self.handshake is not None else device.type != "cpu"
            try:
                self._block = self._make(torch, device)
                if agree:
                    self._agree()
            except Exception as exc:  # the screen goes on, unshared, and says why
                self._block = None
                self.broken = f"{type(exc).__name__}: {exc}"
                if agree:
                    try:
                        _decide(self.decided, "off: " + self.broken)
                    except OSError:
                        pass  # the other side gives up too, when its own wait ends
        return self._block

    def _agree(self) -> None:
        """The mapping side says ``on``; the owner waits for what was decided."""
        if not self.owner:
            said = _decide(self.decided, "on")
        else:
            said = _wait_for(self.decided, self.wait_s, "the other side did not map the block")
        if said != "on":
            raise RuntimeError("the other side does not share: " + said.removeprefix("off: "))

    def _make(self, torch: Any, device: Any) -> Any:
        if device.type == "cpu":  # the CPU demo and tests: a file both processes map
            return torch.from_file(
                str(self.path.with_suffix(".mem")), shared=True, size=POOL_BYTES, dtype=torch.uint8
            )
        if self.owner:
            from multiprocessing.reduction import ForkingPickler

            import torch.multiprocessing  # registers the CUDA reductions with ForkingPickler

            block = torch.empty(POOL_BYTES, dtype=torch.uint8, device=device)
            _write(self.path, bytes(ForkingPickler.dumps(block)))
            return block
        deadline = time.monotonic() + self.wait_s
        while not self.path.exists():
            if self.decided.exists():  # the owner gave up
                raise RuntimeError(self.decided.read_text(encoding="utf-8"))
            if time.monotonic() > deadline:
                raise TimeoutError(f"the other side did not publish {self.path.name}")
            time.sleep(0.05)
        block = pickle.loads(self.path.read_bytes())  # torch's reductions map the CUDA memory
        if block.device != device:
            raise RuntimeError(f"the shared block is on {block.device}, the inputs on {device}")
        return block

    def place(self, op: Callable[..., Any], args: Any, kwargs: Any) -> Placement | None:
        """The call ``op(*args, **kwargs)`` on copies of its input storages in the block, or
        ``None`` (and :attr:`unplaced` says why) when it cannot be: no tensor input, inputs on
        several devices, a layout other than strided, a conjugate or negative view, more than
        :data:`POOL_BYTES`, no block, or an input torch cannot view elsewhere."""
        try:
            placed, why = self._place(op, args, kwargs)
        except Exception as exc:  # the call is timed on its own inputs
            placed, why = None, f"{type(exc).__name__}: {exc}"
        if placed is None:
            self.unplaced = why
        return placed

    def _place(
        self, op: Callable[..., Any], args: Any, kwargs: Any
    ) -> tuple[Placement | None, str]:
        import torch

        tensors: list[Any] = []
        _walk((args, kwargs), lambda v: tensors.append(v) if isinstance(v, torch.Tensor) else v)
        if not tensors:
            return None, "no tensor input"
        device = tensors[0].device
        if any(t.device != device for t in tensors):
            return None, "inputs on several devices"
        if any(t.layout != torch.strided or t.is_conj() or t.is_neg() for t in tensors):
            return None, "an input that is not a plain strided tensor"
        # one copy per storage, so that views and aliases of one storage stay views of one copy;
        # each in a slot that depends on the storages' sizes only, so that both sides lay out
        # the same call alike whatever their addresses
        spans: dict[int, tuple[Any, int]] = {}
        slot = 0
        for t in tensors:
            storage = t.untyped_storage()
            base = storage.data_ptr()
            if base in spans:
                continue
            start = slot + base % KEEP
            if any(
                start % u.element_size() for u in tensors if u.untyped_storage().data_ptr() == base
            ):
                return None, "a storage not aligned to its own elements"
            spans[base] = (storage, start)
            slot = -(-(slot + KEEP + storage.nbytes()) // ALIGN) * ALIGN
        if slot > POOL_BYTES:
            return None, f"inputs of more than {POOL_BYTES >> 20} MiB"
        block = self.block(torch, device)
        if block is None:
            return None, f"no block ({self.broken})"
        copies = []
        for storage, start in spans.values():
            dst = block[start : start + storage.nbytes()]
            copies.append((dst, _bytes_of(torch, storage, device)))

        pool = block.untyped_storage()
        below = block.storage_offset()  # the block's first byte in its storage
        made: dict[int, Any] = {}  # the same tensor object twice is one view twice

        def shared(t: Any) -> Any:
            if not isinstance(t, torch.Tensor):
                return t
            if id(t) not in made:
                _, start = spans[t.untyped_storage().data_ptr()]
                first = (below + start) // t.element_size() + t.storage_offset()
                view = torch.empty(0, dtype=t.dtype, device=device).set_(
                    pool, first, t.size(), t.stride()
                )
                made[id(t)] = view.requires_grad_(t.requires_grad)
            return made[id(t)]

        placed_args, placed_kwargs = _walk((args, kwargs), shared)
        # no values are copied here: the timer loads them inside each of its turns
        return Placement(lambda: op(*placed_args, **placed_kwargs), copies), ""


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def _decide(path: Path, text: str) -> str:
    """Create ``path`` holding ``text`` unless it exists (atomically: a hard link fails on an
    existing name); returns what it holds, ours or the other side's."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_text(encoding="utf-8")


def _wait_for(path: Path, wait_s: float, what: str) -> str:
    """What ``path`` holds once it exists; after ``wait_s`` seconds, ``off`` is decided."""
    deadline = time.monotonic() + wait_s
    while not path.exists():
        if time.monotonic() > deadline:
            return _decide(path, f"off: {what} within {wait_s:g}s")
        time.sleep(0.05)
    return path.read_text(encoding="utf-8")
