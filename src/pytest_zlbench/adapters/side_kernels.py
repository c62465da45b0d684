"""Several compilations of the same Triton kernels in one process, one per side: the part of a
comparison inside one process that gives each side its own kernels (docs/PERFORMANCE.md, "One
process, one memory"; ``benchmarks/same_process_noise.py --switch`` drives it on a card).

Triton keeps each ``JITFunction``'s compiled kernels in memory (``device_caches``) and FlagGems'
``LibEntry`` keeps its own (``kernel_cache``), so a switch set after a kernel compiled would
reach no launch. While :meth:`SideKernels.use` is active for a side, every such cache is that
side's own, Triton's cache folder is the side's, and the side's environment is set: a kernel a
side launches for the first time compiles under what that side's compiler reads.

A ``JITFunction``'s ``device_caches`` is read through a property of the class while installed,
so that every path to a launch sees the side in use's caches, including a ``run`` that a
library replaced on the function itself (FlagGems' Hopper mm guard binds the class's ``run``
at import). A ``LibEntry``'s caches are swapped in by its patched ``run``: they stay those of
the side that ran it last until it runs again.

The side in use and the environment belong to the whole process: one thread launches at a time
(a capture thread included, while the launching thread waits for it).
:meth:`SideKernels.uninstall` gives every function its own caches back.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
import weakref
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: FlagGems' kernel wrapper, patched where FlagGems is already imported
LIBENTRY_MODULE = "flag_gems.utils.libentry"

_ABSENT = object()  # a class attribute that was not there before install


class SideKernels:
    """Kernel caches, a Triton cache folder (``<root>/<side>``) and an environment per side.

    ``envs`` maps each side to the variables it sets (its switch); a variable named by any side
    is unset in the others. The first side owns the caches the functions had before
    :meth:`install`, and is the side in use outside :meth:`use`. ``ttgir[side][kernel]`` holds
    the digests of the TTGIR of the kernels each side launched through ``JITFunction.run``."""

    def __init__(self, root: Path, envs: Mapping[str, Mapping[str, str]]) -> None:
        if not envs:
            raise ValueError("SideKernels needs at least one side")
        self.root = root
        self.envs = {side: dict(env) for side, env in envs.items()}
        self.sides = list(self.envs)
        self.current = self.sides[0]
        self.ttgir: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        #: (side, kernel name) launched since :meth:`reset`
        self.touched: set[tuple[str, str]] = set()
        self._names = sorted({name for env in self.envs.values() for name in env})
        #: (side, id of a kernel) -> (the kernel, its name): digested already (the kernel is
        #: held so that its id cannot name another one)
        self._seen: dict[tuple[str, int], tuple[Any, str]] = {}
        self._patched: list[tuple[Any, str, Any]] = []
        self._owners: weakref.WeakSet[Any] = weakref.WeakSet()

    # -- installing --------------------------------------------------------------------------

    def install(self) -> None:
        """Patch ``JITFunction.run`` (and ``LibEntry.run`` where FlagGems is imported). Called
        again, it patches what it has not yet (FlagGems imported since); a call that cannot
        patch one of them patches neither."""
        from triton.runtime.jit import JITFunction

        libentry = sys.modules.get(LIBENTRY_MODULE)
        owners = [JITFunction]
        if libentry is not None and hasattr(libentry, "LibEntry"):
            owners.append(libentry.LibEntry)
        done = [owner for owner, _, _ in self._patched]
        owners = [owner for owner in owners if owner not in done]
        for owner in owners:
            self._check(owner)
        for owner in owners:
            if owner is JITFunction:
                self._patch(owner, "run", self._jit_run(owner.run))
                self._patch(owner, "device_caches", self._jit_caches())
            else:
                self._patch(owner, "run", self._entry_run(owner.run))

    def uninstall(self) -> None:
        """Restore the patched methods, and every function's own (the first side's) caches."""
        for owner, name, old in reversed(self._patched):
            if old is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._patched.clear()
        first = self.sides[0]
        for obj in list(self._owners):
            store = obj.__dict__.pop("_zl_side_caches", {})
            if first in store:
                self._swap_in(obj, store[first])

    @staticmethod
    def _check(owner: Any) -> None:
        if "run" not in owner.__dict__:
            raise RuntimeError(
                f"{owner.__module__}.{owner.__qualname__} defines no run of its own "
                f"(it inherits {inspect.getattr_static(owner, 'run', None)!r}): this version "
                "cannot keep kernels per side"
            )

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._patched.append((owner, name, owner.__dict__.get(name, _ABSENT)))
        setattr(owner, name, value)

    # -- one cache per side --------------------------------------------------------------------

    def _caches(self, obj: Any, fresh: Any) -> Any:
        """A ``LibEntry``'s caches for the side in use, made by ``fresh()`` the first time."""
        store = self._side_store(obj)
        store.setdefault(self.sides[0], (obj.kernel_cache, obj._cpu_cache))
        if self.current not in store:
            store[self.current] = fresh()
        return store[self.current]

    @staticmethod
    def _swap_in(obj: Any, caches: tuple[Any, Any]) -> None:
        obj.kernel_cache, obj._cpu_cache = caches

    def _jit_caches(self) -> property:
        """``JITFunction.device_caches`` while installed: the function's own (kept where
        Triton put them) for the first side and whenever it sets them first, else the side in
        use's, made empty the first time."""
        sides = self
        first = self.sides[0]

        def get(fn: Any) -> Any:
            own = fn.__dict__
            if sides.current == first or "device_caches" not in own:
                try:
                    return own["device_caches"]
                except KeyError:
                    raise AttributeError("device_caches") from None
            return sides._side_store(fn).setdefault(sides.current, defaultdict(fn.create_binder))

        def put(fn: Any, caches: Any) -> None:
            own = fn.__dict__
            if sides.current == first or "device_caches" not in own:
                own["device_caches"] = caches
            else:
                sides._side_store(fn)[sides.current] = caches

        return property(get, put)

    def _side_store(self, obj: Any) -> dict[str, Any]:
        store = obj.__dict__.get("_zl_side_caches")
        if store is None:
            store = obj.__dict__["_zl_side_caches"] = {}
            self._owners.add(obj)
        return store  # type: ignore[no-any-return]

    def _jit_run(self, run: Any) -> Any:
        sides = self

        def side_run(fn: Any, *args: Any, **kwargs: Any) -> Any:
            kernel = run(fn, *args, **kwargs)
            sides._note(kernel)
            return kernel

        return side_run

    def _entry_run(self, run: Any) -> Any:
        sides = self

        def side_run(entry: Any, *args: Any, **kwargs: Any) -> Any:
            def fresh() -> tuple[tuple[dict[Any, Any], ...], dict[Any, Any]]:
                return tuple({} for _ in entry.kernel_cache), {}

            sides._swap_in(entry, sides._caches(entry, fresh))
            return run(entry, *args, **kwargs)

        return side_run

    def _note(self, kernel: Any) -> None:
        seen = self._seen.get((self.current, id(kernel)))
        if seen is not None and seen[0] is kernel:  # a kernel this side already digested
            self.touched.add((self.current, seen[1]))
            return
        ttgir = (getattr(kernel, "asm", None) or {}).get("ttgir")
        name = getattr(kernel, "name", None)
        if ttgir and name:
            self._seen[(self.current, id(kernel))] = (kernel, name)
            text = ttgir if isinstance(ttgir, str) else str(ttgir)
            self.ttgir[self.current][name].add(hashlib.sha256(text.encode()).hexdigest()[:16])
            self.touched.add((self.current, name))

    # -- the side in use ---------------------------------------------------------------------

    @contextmanager
    def use(self, side: str) -> Iterator[None]:
        """Make ``side`` the side in use: its caches, its Triton cache folder, its environment;
        the previous side, folder and environment come back afterwards."""
        if side not in self.envs:
            raise ValueError(f"unknown side {side!r} (sides: {', '.join(self.sides)})")
        folder = self.root / side
        folder.mkdir(parents=True, exist_ok=True)
        names = [*self._names, "TRITON_CACHE_DIR"]
        saved = {name: os.environ.get(name) for name in names}
        previous = self.current
        for name in self._names:
            os.environ.pop(name, None)
        os.environ.update(self.envs[side])
        os.environ["TRITON_CACHE_DIR"] = str(folder)
        self.current = side
        try:
            yield
        finally:
            self.current = previous
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    # -- what each side compiled ---------------------------------------------------------------

    def differs(self, side: str) -> bool | None:
        """Whether a kernel ``side`` launched since :meth:`reset` has a TTGIR that the first
        side's kernel of that name never had; ``None`` when it launched none through
        ``JITFunction.run`` (a wrapper's cache served it)."""
        first = self.ttgir[self.sides[0]]
        names = [name for s, name in self.touched if s == side]
        if not names:
            return None
        return any(not self.ttgir[side][name] <= first.get(name, set()) for name in names)

    def reset(self) -> None:
        self.touched.clear()
