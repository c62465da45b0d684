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
    :meth:`install`, and is the side in use outside :meth:`use`."""

    def __init__(self, root: Path, envs: Mapping[str, Mapping[str, str]]) -> None:
        if not envs:
            raise ValueError("SideKernels needs at least one side")
        self.root = root
        self.envs = {side: dict(env) for side, env in envs.items()}
        self.sides = list(self.envs)
        self.current = self.sides[0]
        #: (side, id of a JITFunction) -> a weak reference to it: the functions whose kernel
        #: caches the side read since :meth:`reset` (every launch through Triton reads them)
        self._touched: dict[tuple[str, int], Any] = {}
        self._names = sorted({name for env in self.envs.values() for name in env})
        self._patched: list[tuple[Any, str, Any]] = []
        self._owners: weakref.WeakSet[Any] = weakref.WeakSet()

    # -- installing --------------------------------------------------------------------------

    def install(self) -> None:
        """Give ``JITFunction`` its per-side ``device_caches`` property (and patch
        ``LibEntry.run`` where FlagGems is imported). Called again, it patches what it has not
        yet (FlagGems imported since); a call that cannot patch one of them patches neither."""
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
        self._touched.clear()
        first = self.sides[0]
        for obj in list(self._owners):
            store = obj.__dict__.pop("_zl_side_caches", {})
            if first in store:
                self._swap_in(obj, store[first])

    @staticmethod
    def _check(owner: Any) -> None:
        if owner.__name__ == "JITFunction":
            # Triton 3.2+: device_caches, whose binders ``create_binder(self)`` makes (3.0 and
            # 3.1 kept kernels in ``cache`` and took a backend)
            binder = owner.__dict__.get("create_binder")
            if binder is None or list(inspect.signature(binder).parameters) != ["self"]:
                raise RuntimeError(
                    f"{owner.__module__}.JITFunction keeps no device_caches of its own: this "
                    "version cannot keep kernels per side"
                )
            if "device_caches" in owner.__dict__:
                raise RuntimeError(
                    f"{owner.__module__}.JITFunction.device_caches is patched already (by "
                    "another SideKernels?): one installs at a time"
                )
            return
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
            key = (sides.current, id(fn))
            if key not in sides._touched:
                sides._touched[key] = weakref.ref(fn)
            if sides.current == first or "device_caches" not in own:
                try:
                    return own["device_caches"]
                except KeyError:
                    raise AttributeError("device_caches") from None
            store = sides._side_store(fn)
            caches = store.get(sides.current)
            if caches is None:
                caches = store[sides.current] = defaultdict(fn.create_binder)
            return caches

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

    def _entry_run(self, run: Any) -> Any:
        sides = self

        def side_run(entry: Any, *args: Any, **kwargs: Any) -> Any:
            def fresh() -> tuple[tuple[dict[Any, Any], ...], dict[Any, Any]]:
                return tuple({} for _ in entry.kernel_cache), {}

            sides._swap_in(entry, sides._caches(entry, fresh))
            return run(entry, *args, **kwargs)

        return side_run

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
        """Whether a function ``side`` launched since :meth:`reset` holds a kernel for it whose
        TTGIR the first side's kernels of that function never had; ``None`` when it launched
        none through Triton (a wrapper's cache served it)."""
        first = self.sides[0]
        fns = [ref() for (s, _), ref in list(self._touched.items()) if s == side]
        pairs = [
            (_ttgir(self._caches_of(fn, side)), _ttgir(self._caches_of(fn, first)))
            for fn in fns
            if fn is not None
        ]
        pairs = [(mine, theirs) for mine, theirs in pairs if mine]
        if not pairs:
            return None
        return any(not mine <= theirs for mine, theirs in pairs)

    def _caches_of(self, fn: Any, side: str) -> Any:
        if side == self.sides[0]:
            return fn.__dict__.get("device_caches")
        return fn.__dict__.get("_zl_side_caches", {}).get(side)

    def reset(self) -> None:
        self._touched.clear()


def _ttgir(caches: Any) -> set[str]:
    """Digests of the TTGIR of the compiled kernels in a ``JITFunction``'s caches: Triton's (per
    device, a tuple whose dicts hold them) or a plain mapping of them."""
    out: set[str] = set()
    for value in (caches or {}).values():
        for part in value if isinstance(value, tuple) else (value,):
            for kernel in part.values() if isinstance(part, dict) else (part,):
                asm = getattr(kernel, "asm", None)  # Triton's AsmDict is a dict
                ttgir = asm.get("ttgir") if isinstance(asm, Mapping) else None
                if ttgir:
                    text = ttgir if isinstance(ttgir, str) else str(ttgir)
                    out.add(hashlib.sha256(text.encode()).hexdigest()[:16])
    return out
