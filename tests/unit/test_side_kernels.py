"""Several compilations of the same Triton kernels in one process (``adapters.side_kernels``).

Triton's launch path needs a driver, so ``JITFunction.run`` is replaced by a stand-in that
compiles on a cache miss as Triton's does (into the function's ``device_caches``, the kernel's
TTGIR from what the environment says at that moment); the functions are real ``@triton.jit``
functions. The environment each side sets reaches the real compiler: the last test compiles a
real matmul for sm_90 on the CPU under two sides of one process.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from pytest_zlbench.adapters.side_kernels import LIBENTRY_MODULE, SideKernels

triton = pytest.importorskip("triton")

pytestmark = pytest.mark.triton

DATA = Path(__file__).resolve().parent.parent / "data"
SWITCH = {"DISABLE_MMA_V3": "1"}


@triton.jit
def first_kernel(x_ptr):
    pass


@triton.jit
def second_kernel(x_ptr):
    pass


@triton.jit
def untimed_kernel(x_ptr):  # compiled first by a test's own call (one test only)
    pass


@triton.jit
def guarded_kernel(x_ptr):  # its run replaced on the function itself (one test only)
    pass


class Kernel:
    def __init__(self, name: str, ttgir: str) -> None:
        self.name = name
        self.asm = {"ttgir": ttgir}


class StandIn:
    """``JITFunction.run`` without a driver: compiles on a miss into ``fn.device_caches``."""

    def __init__(self) -> None:
        self.compiled: list[tuple[str, str, str]] = []  # (function, ttgir, TRITON_CACHE_DIR)

    def __get__(self, fn: Any, owner: Any = None) -> Any:  # bound like a method
        return self if fn is None else types.MethodType(self, fn)

    def __call__(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        caches = fn.device_caches
        if "kernel" not in caches:  # a plain dict lookup: no binder (it needs a driver)
            ttgir = "mma v2" if os.environ.get("DISABLE_MMA_V3") else "warp_group_dot"
            caches["kernel"] = Kernel(fn.__name__, ttgir)
            self.compiled.append((fn.__name__, ttgir, os.environ.get("TRITON_CACHE_DIR", "")))
        return caches["kernel"]


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> StandIn:
    from triton.runtime.jit import JITFunction

    run = StandIn()
    monkeypatch.setattr(JITFunction, "run", run)
    for name in ("DISABLE_MMA_V3", "TRITON_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    return run


@pytest.fixture
def sides(tmp_path: Path, stand_in: StandIn) -> Any:
    kernels = SideKernels(tmp_path, {"A": {}, "B": SWITCH, "C": {}})
    kernels.install()
    yield kernels
    kernels.uninstall()


def test_each_side_compiles_and_keeps_its_own_kernel(sides: SideKernels, stand_in: StandIn):
    own = first_kernel.device_caches
    with sides.use("A"):
        a = first_kernel.run()
    with sides.use("B"):
        b = first_kernel.run()
        assert first_kernel.run() is b  # compiled once per side
    with sides.use("C"):
        c = first_kernel.run()
    assert first_kernel.run() is a  # outside use(): the first side, the function's own caches
    assert (a.asm["ttgir"], b.asm["ttgir"], c.asm["ttgir"]) == (
        "warp_group_dot",
        "mma v2",
        "warp_group_dot",
    )
    assert [(f, Path(d).name) for f, _, d in stand_in.compiled] == [
        ("first_kernel", "A"),
        ("first_kernel", "B"),
        ("first_kernel", "C"),
    ]
    assert first_kernel.device_caches is own
    # the switch changed B's TTGIR; the third side, compiled afresh without it, did not
    assert (sides.differs("B"), sides.differs("C")) == (True, False)
    sides.reset()
    with sides.use("B"):
        second_kernel.run()
    assert (sides.differs("B"), sides.differs("C")) == (True, None)
    # a kernel launched again after a reset counts again
    sides.reset()
    with sides.use("C"):
        first_kernel.run()
    assert sides.differs("C") is False


def test_a_side_sets_its_environment_and_gives_back_what_was_there(
    tmp_path: Path, stand_in: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISABLE_MMA_V3", "from-the-shell")
    monkeypatch.setenv("TRITON_CACHE_DIR", "/elsewhere")
    sides = SideKernels(tmp_path, {"A": {}, "B": SWITCH})
    with sides.use("A"):
        assert "DISABLE_MMA_V3" not in os.environ  # a variable another side sets is unset
        assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "A")
        with sides.use("B"):
            assert os.environ["DISABLE_MMA_V3"] == "1"
            assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "B")
            assert sides.current == "B"
        assert "DISABLE_MMA_V3" not in os.environ
        assert sides.current == "A"
    assert os.environ["DISABLE_MMA_V3"] == "from-the-shell"
    assert os.environ["TRITON_CACHE_DIR"] == "/elsewhere"
    with pytest.raises(ValueError, match="unknown side 'D'"), sides.use("D"):
        pass


def test_uninstall_gives_every_function_its_own_caches_back(tmp_path: Path, stand_in: StandIn):
    from triton.runtime.jit import JITFunction

    own = second_kernel.device_caches
    sides = SideKernels(tmp_path, {"A": {}, "B": SWITCH})
    sides.install()
    try:
        with sides.use("B"):
            second_kernel.run()
            assert second_kernel.device_caches is not own
        assert second_kernel.device_caches is own  # outside use(): the first side's
    finally:
        sides.uninstall()
    assert second_kernel.device_caches is own
    assert JITFunction.__dict__["run"] is stand_in
    assert "device_caches" not in JITFunction.__dict__
    assert "_zl_side_caches" not in second_kernel.__dict__


def test_flaggems_libentry_caches_are_kept_per_side(
    tmp_path: Path, stand_in: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FlagGems' wrapper caches the compiled kernel itself and launches it without Triton's
    run on a hit: its caches are per side too."""

    class LibEntry:
        def __init__(self, fn: Any) -> None:
            self.fn = fn
            self.kernel_cache: tuple[dict[Any, Any], ...] = ({},)
            self._cpu_cache: dict[Any, Any] = {}

        def run(self, *args: Any, **kwargs: Any) -> Any:
            cache = self.kernel_cache[0]
            if "key" not in cache:
                cache["key"] = self.fn.run(*args, **kwargs)
            return cache["key"]

    module = types.ModuleType(LIBENTRY_MODULE)
    module.LibEntry = LibEntry  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, LIBENTRY_MODULE, module)
    entry = LibEntry(first_kernel)
    sides = SideKernels(tmp_path, {"A": {}, "B": SWITCH})
    sides.install()
    try:
        with sides.use("A"):
            a = entry.run()
        with sides.use("B"):
            b = entry.run()
        assert (a.asm["ttgir"], b.asm["ttgir"]) == ("warp_group_dot", "mma v2")
        assert entry.run() is a
    finally:
        sides.uninstall()
    assert LibEntry.__dict__["run"].__name__ == "run"


def matmul_source() -> Any:
    """Triton's source of the matmul of ``tests/data/triton_kernels.py`` for sm_90, and its
    options (``tests/data/triton_compile.py`` says how it is specialised)."""
    spec = importlib.util.spec_from_file_location("zl_compile", DATA / "triton_compile.py")
    assert spec is not None
    assert spec.loader is not None
    helper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helper)
    module = helper.load_module(str(DATA / "triton_kernels.py"))
    signature, constexprs, divisible, options = helper.SPECS["matmul_kernel"]
    attrs = {(i,): helper.DIV16 for i in divisible}
    return triton.compiler.ASTSource(module.matmul_kernel, signature, constexprs, attrs), options


def clean_compiler_env(mp: pytest.MonkeyPatch, home: Path) -> None:
    """No variable that steers Triton's compiler from the caller; its home in ``home``."""
    for name in list(os.environ):
        if name.startswith(("TRITON_", "DISABLE_", "MLIR_", "LLVM_")):
            mp.delenv(name)
    mp.setenv("TRITON_HOME", str(home))


def test_a_side_s_switch_reaches_the_real_compiler_in_the_same_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process, two sides: Hopper's MMA v3 (``warp_group_dot``) for A, not for B."""
    from triton.backends.compiler import GPUTarget

    clean_compiler_env(monkeypatch, tmp_path / "home")
    source, options = matmul_source()

    def ttgir() -> str:
        kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)
        return str(kernel.asm["ttgir"])

    sides = SideKernels(tmp_path / "caches", {"A": {}, "B": SWITCH})
    with sides.use("A"):
        a = ttgir()
    with sides.use("B"):
        b = ttgir()
    with sides.use("A"):
        again = ttgir()
    assert "warp_group_dot" in a
    assert "warp_group_dot" not in b
    assert again == a
    assert sorted(p.name for p in (tmp_path / "caches").iterdir()) == ["A", "B"]
    assert all(any((tmp_path / "caches" / s).iterdir()) for s in "AB")


def test_a_wrapper_without_a_run_of_its_own_is_refused_in_one_line(
    tmp_path: Path, stand_in: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Base:
        def run(self) -> None: ...

    class LibEntry(Base):
        pass

    module = types.ModuleType(LIBENTRY_MODULE)
    module.LibEntry = LibEntry  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, LIBENTRY_MODULE, module)
    from triton.runtime.jit import JITFunction

    sides = SideKernels(tmp_path, {"A": {}, "B": SWITCH})
    with pytest.raises(RuntimeError, match="defines no run of its own"):
        sides.install()
    assert JITFunction.__dict__["run"] is stand_in  # nothing was patched
    assert "device_caches" not in JITFunction.__dict__


def test_flaggems_imported_after_the_first_install_is_patched_by_the_next(
    tmp_path: Path, stand_in: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    from triton.runtime.jit import JITFunction

    class LibEntry:
        def run(self) -> None: ...

    sides = SideKernels(tmp_path, {"A": {}, "B": SWITCH})
    sides.install()  # before FlagGems is imported
    patched = JITFunction.__dict__["device_caches"]
    module = types.ModuleType(LIBENTRY_MODULE)
    module.LibEntry = LibEntry  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, LIBENTRY_MODULE, module)
    original = LibEntry.__dict__["run"]
    sides.install()
    try:
        assert JITFunction.__dict__["device_caches"] is patched  # not patched twice
        assert LibEntry.__dict__["run"] is not original
    finally:
        sides.uninstall()
    assert JITFunction.__dict__["run"] is stand_in
    assert LibEntry.__dict__["run"] is original


def test_a_one_process_worker_compiles_side_a_afresh_after_the_test_s_own_call(
    tmp_path: Path, stand_in: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a test runs outside its timed calls has kernels of its own: side A's timed call
    compiles its kernel into side A's folder even when the test compiled it first."""
    import json

    from pytest_zlbench.screen.both_sides import BothSides

    monkeypatch.setenv("ZLBENCH_SWITCH", json.dumps(SWITCH))
    both = BothSides(tmp_path)
    try:
        assert both.install() is None
        untimed_kernel.run()  # the test's own call
        with both.use("A"):
            untimed_kernel.run()
        with both.use("B"):
            untimed_kernel.run()
    finally:
        both.uninstall()
    assert [(f, ttgir, Path(d).name if d else "") for f, ttgir, d in stand_in.compiled] == [
        ("untimed_kernel", "warp_group_dot", ""),
        ("untimed_kernel", "warp_group_dot", "A"),
        ("untimed_kernel", "mma v2", "B"),
    ]


def test_a_function_whose_run_was_replaced_on_it_before_install_keeps_kernels_per_side(
    tmp_path: Path, stand_in: StandIn
) -> None:
    """FlagGems' Hopper mm guard replaces ``run`` on its JITFunction at import, calling the
    class's run it bound then: the patched class method never sees those launches, and side B
    launched side A's compiled kernel (a real DISABLE_MMA_V3 screen read mm as NO_IR_DIFF)."""
    from triton.runtime.jit import JITFunction

    bound = types.MethodType(JITFunction.__dict__["run"], guarded_kernel)
    guarded_kernel.run = lambda *args, **kwargs: bound(*args, **kwargs)
    own = guarded_kernel.device_caches
    sides = SideKernels(tmp_path, {"A": {}, "B": SWITCH})
    sides.install()
    try:
        with sides.use("A"):
            a = guarded_kernel.run()
        with sides.use("B"):
            b = guarded_kernel.run()
            assert guarded_kernel.run() is b
        assert guarded_kernel.run() is a
        assert sides.differs("B") is True  # seen although the class's run never ran
    finally:
        sides.uninstall()
        del guarded_kernel.run
    assert (a.asm["ttgir"], b.asm["ttgir"]) == ("warp_group_dot", "mma v2")
    assert [Path(d).name for _, _, d in stand_in.compiled] == ["A", "B"]
    assert guarded_kernel.device_caches is own
    assert "device_caches" not in JITFunction.__dict__


def test_a_function_made_or_given_caches_while_a_side_is_in_use(
    tmp_path: Path, stand_in: StandIn
) -> None:
    """A kernel module imported while side B is in use (FlagGems' late imports): the caches
    Triton gives the new function are its own (the first side's), side B's are apart; caches
    set while side B is in use are side B's only."""
    from triton.runtime.jit import JITFunction

    sides = SideKernels(tmp_path, {"A": {}, "B": SWITCH})
    sides.install()
    try:
        with sides.use("B"):

            @triton.jit
            def late_kernel(x_ptr):
                pass

            own = late_kernel.__dict__["device_caches"]  # what Triton's __init__ set
            assert late_kernel.device_caches is not own
            b = late_kernel.run()
        with sides.use("A"):
            assert late_kernel.device_caches is own
            a = late_kernel.run()
        assert (a.asm["ttgir"], b.asm["ttgir"]) == ("warp_group_dot", "mma v2")
        assert late_kernel.device_caches is own
        with sides.use("B"):
            late_kernel.device_caches = {"kernel": b}
            assert late_kernel.device_caches == {"kernel": b}
        assert late_kernel.device_caches is own
    finally:
        sides.uninstall()
    assert "device_caches" not in JITFunction.__dict__
    assert "_zl_side_caches" not in late_kernel.__dict__


def test_a_triton_whose_jitfunction_keeps_no_device_caches_is_refused_in_one_line(
    tmp_path: Path, stand_in: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    from triton.runtime.jit import JITFunction

    def create_binder(self: Any, backend: Any) -> None: ...  # Triton 3.0 and 3.1

    monkeypatch.setattr(JITFunction, "create_binder", create_binder)
    with pytest.raises(RuntimeError, match="JITFunction keeps no device_caches of its own"):
        SideKernels(tmp_path, {"A": {}, "B": SWITCH}).install()
    assert "device_caches" not in JITFunction.__dict__
    monkeypatch.delattr(JITFunction, "create_binder")
    with pytest.raises(RuntimeError, match="JITFunction keeps no device_caches of its own"):
        SideKernels(tmp_path, {"A": {}, "B": SWITCH}).install()


def test_a_second_installation_is_refused_in_one_line(tmp_path: Path, stand_in: StandIn) -> None:
    sides = SideKernels(tmp_path / "one", {"A": {}, "B": SWITCH})
    sides.install()
    try:
        with pytest.raises(RuntimeError, match="device_caches is patched already"):
            SideKernels(tmp_path / "two", {"A": {}, "B": SWITCH}).install()
    finally:
        sides.uninstall()


def test_the_ttgir_of_a_side_is_read_from_caches_laid_out_as_tritons(tmp_path: Path) -> None:
    """Triton 3.6 keeps, per device, (kernel cache, key cache, target, backend, binder): the
    compiled kernels are in the first; nothing else there has a TTGIR."""
    from triton.backends.compiler import GPUTarget

    from pytest_zlbench.adapters.side_kernels import _ttgir

    source, options = matmul_source()
    with pytest.MonkeyPatch.context() as mp:
        clean_compiler_env(mp, tmp_path)
        kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)
    target = GPUTarget("cuda", 90, 32)
    caches = {0: ({"key": kernel}, {"specialisation": "key"}, target, object(), print)}
    (digest,) = _ttgir(caches)
    assert digest == hashlib.sha256(str(kernel.asm["ttgir"]).encode()).hexdigest()[:16]
    assert _ttgir({0: ({}, {}, target, object(), print)}) == set()


def test_side_b_left_unwritten_closes_its_partial_rows(tmp_path: Path) -> None:
    """Side A's run directory could not be written (a full disk): side B's is left unwritten,
    its partial rows file closed, not held open for every operator cut so."""
    from types import SimpleNamespace

    from pytest_zlbench.screen.both_sides import BothSides

    both = BothSides(tmp_path)
    partial = open(tmp_path / "rows.partial", "w")  # noqa: SIM115 - what the recorder holds
    recorder = SimpleNamespace(partial=partial)
    recorder.close_partial = lambda: partial.close()
    both.recorder = recorder
    both.drop()
    assert partial.closed
    assert both.recorder is None
    both.drop()  # nothing left: nothing to close
