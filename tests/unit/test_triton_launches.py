"""adapters.triton_launches: per-operator IR from the kernels each operator launched.

Real Triton 3.6 compiles three kernels for sm_90 on the CPU
(``tests/data/triton_launch_kernels.py``) into a cache directory. Launching needs a GPU, so the
tests drive Triton's own hook chains the way its runtime does: ``CompiledKernel._init_handles``
calls ``knobs.runtime.kernel_load_end_hook(module, function, name, metadata_group, hash)`` once
it loaded the binary, and the launcher calls ``knobs.runtime.launch_enter_hook`` with a
``LazyDict`` of ``name``, ``function`` and ``stream`` before every launch.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_zlbench.adapters.triton_ir import nodebug_text
from pytest_zlbench.adapters.triton_launches import (
    LOADED_BEFORE_INSTALL,
    Launched,
    LaunchRecorder,
    ir_entry,
    op_ir,
)
from pytest_zlbench.core.fingerprint import IrReport, compare, scan_cache

triton = pytest.importorskip("triton")

pytestmark = pytest.mark.triton

KERNELS = Path(__file__).resolve().parent.parent / "data" / "triton_launch_kernels.py"
SIGNATURES = {
    "k_shared": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
    "k_op1": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
    "k_op2": {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
}
# Environment variables that steer Triton's compile or cache; none may leak in from the caller.
CLEARED_PREFIXES = ("TRITON_", "DISABLE_", "MLIR_", "LLVM_", "NVPTX_", "AMDGCN_", "FLAGTREE_")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The cache root and the CompiledKernel of each of the three kernels."""
    from triton.backends.compiler import GPUTarget

    root = tmp_path_factory.mktemp("launches")
    cache = root / "cache"
    spec = importlib.util.spec_from_file_location("zl_launch_kernels", KERNELS)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith(CLEARED_PREFIXES):
                mp.delenv(name)
        mp.setenv("TRITON_HOME", str(root))
        mp.setenv("TRITON_CACHE_DIR", str(cache))
        kernels = {
            name: triton.compile(
                triton.compiler.ASTSource(getattr(module, name), sig, {"BLOCK": 128}, {}),
                target=GPUTarget("cuda", 90, 32),
                options={"num_warps": 4},
            )
            for name, sig in SIGNATURES.items()
        }
    return cache, kernels


class Runtime:
    """Triton's runtime in the part that concerns the hooks: a process loads each compiled
    kernel once (a new function handle) and then launches it any number of times."""

    handles = itertools.count(0x7F00_0000_1000, 0x100)

    def __init__(self, kernels: dict[str, Any]) -> None:
        self.kernels = kernels
        self.functions: dict[str, int] = {}

    def launch(self, name: str) -> None:
        from triton.compiler.compiler import LazyDict

        runtime = triton.knobs.runtime
        kernel = self.kernels[name]
        if name not in self.functions:  # CompiledKernel._init_handles, at the first launch
            function = self.functions[name] = next(self.handles)
            runtime.kernel_load_start_hook(
                None, None, kernel.name, kernel.metadata_group, kernel.hash
            )
            runtime.kernel_load_end_hook(
                object(), function, kernel.name, kernel.metadata_group, kernel.hash
            )
        # CompiledKernel.launch_metadata, then the launcher
        runtime.launch_enter_hook(
            LazyDict({"name": kernel.name, "function": self.functions[name], "stream": 0})
        )


@pytest.fixture
def recorder() -> Iterator[LaunchRecorder]:
    rec = LaunchRecorder()
    rec.install()
    yield rec
    rec.uninstall()


def names(kernels: list[Launched]) -> list[str]:
    return [k.name for k in kernels]


def test_an_operator_has_the_same_ir_alone_and_after_another_that_shared_a_kernel(
    compiled: tuple[Path, dict[str, Any]],
) -> None:
    _, kernels = compiled
    # a fresh process runs op2 alone
    alone = LaunchRecorder()
    alone.install()
    try:
        process = Runtime(kernels)
        alone.begin("op2")
        for name in ("k_shared", "k_op2", "k_shared"):
            process.launch(name)
        op2_alone = alone.end()
    finally:
        alone.uninstall()
    # another process runs op1, then op2: k_shared was loaded during op1
    batch = LaunchRecorder()
    batch.install()
    try:
        process = Runtime(kernels)
        batch.begin("op1")
        for name in ("k_shared", "k_op1", "k_op1"):
            process.launch(name)
        op1 = batch.end()
        batch.begin("op2")
        for name in ("k_shared", "k_op2", "k_shared"):
            process.launch(name)
        op2_after = batch.end()
    finally:
        batch.uninstall()

    assert names(op1) == ["k_op1", "k_shared"]
    assert names(op2_after) == ["k_op2", "k_shared"]
    assert op2_after == op2_alone
    ir_alone, ir_after = op_ir(op2_alone, nodebug_text), op_ir(op2_after, nodebug_text)
    assert ir_after.to_json() == ir_alone.to_json()
    assert not ir_after.unknown
    assert sorted(ir_after.report.fingerprint()) == ["k_op2", "k_shared"]
    assert ir_after.report.method == "nodebug"
    assert ir_after.report.triton_version == triton.__version__
    assert not compare(ir_alone.report, ir_after.report).changed
    assert compare(op_ir(op1, nodebug_text).report, ir_after.report).kernels_changed == (
        "k_op1",
        "k_op2",
    )


@pytest.mark.parametrize("nodebug", [nodebug_text, None], ids=["nodebug", "stripped"])
def test_entries_are_the_entries_of_a_runs_ir_json(
    compiled: tuple[Path, dict[str, Any]], recorder: LaunchRecorder, nodebug: Any
) -> None:
    cache, kernels = compiled
    process = Runtime(kernels)
    recorder.begin("all")
    for name in kernels:
        process.launch(name)
    ir = op_ir(recorder.end(), nodebug)
    whole = scan_cache(cache, nodebug=nodebug)  # what write_ir puts in a run's ir.json
    assert ir.report.to_json() == whole.to_json()
    assert IrReport.from_json(ir.to_json()) == whole  # the ir.json reader reads it
    shared = kernels["k_shared"]
    entry = ir_entry(
        Launched(shared.name, shared.hash, tuple(shared.metadata_group.items())), nodebug
    )
    assert [e for e in whole.entries if e.kernel == "k_shared"] == [entry]


def test_a_kernel_loaded_before_install_is_reported_with_unknown_ir(
    compiled: tuple[Path, dict[str, Any]],
) -> None:
    _, kernels = compiled
    process = Runtime(kernels)
    process.launch("k_op1")  # loaded while no recorder listened
    recorder = LaunchRecorder()
    recorder.install()
    try:
        recorder.begin("op")
        process.launch("k_op1")
        process.launch("k_shared")
        launched = recorder.end()
    finally:
        recorder.uninstall()
    assert launched == [
        Launched("k_op1"),
        Launched(
            "k_shared",
            kernels["k_shared"].hash,
            tuple(sorted(kernels["k_shared"].metadata_group.items())),
        ),
    ]
    ir = op_ir(launched)
    assert ir.unknown == (("k_op1", LOADED_BEFORE_INSTALL),)
    assert list(ir.report.fingerprint()) == ["k_shared"]
    assert ir.to_json()["unknown"] == [{"kernel": "k_op1", "reason": LOADED_BEFORE_INSTALL}]


def test_a_cache_entry_without_ttgir_is_unknown_ir(compiled: tuple[Path, dict[str, Any]]) -> None:
    _, kernels = compiled
    group = kernels["k_op1"].metadata_group
    binary_only = Launched(
        "k_op1",
        kernels["k_op1"].hash,
        tuple(sorted((f, p) for f, p in group.items() if f.endswith((".cubin", ".json")))),
    )
    ir = op_ir([binary_only])
    assert ir.report.entries == ()
    assert ir.unknown[0][0] == "k_op1"
    assert "no .ttgir" in ir.unknown[0][1]


def test_only_launches_between_begin_and_end_count(
    compiled: tuple[Path, dict[str, Any]], recorder: LaunchRecorder
) -> None:
    _, kernels = compiled
    process = Runtime(kernels)
    process.launch("k_op1")  # loaded and launched outside any operator
    recorder.begin("op")
    process.launch("k_op2")
    assert names(recorder.end()) == ["k_op2"]
    process.launch("k_shared")
    recorder.begin("next")
    process.launch("k_op1")  # loaded outside, launched inside: known
    launched = recorder.end()
    assert names(launched) == ["k_op1"]
    assert launched[0].hash == kernels["k_op1"].hash
    with pytest.raises(RuntimeError, match="without begin"):
        recorder.end()


def test_the_hooks_join_and_leave_tritons_chains_and_never_fail_a_launch(
    compiled: tuple[Path, dict[str, Any]],
) -> None:
    from triton.compiler.compiler import LazyDict

    runtime = triton.knobs.runtime
    others: list[str] = []

    def other(metadata: Any) -> None:  # another tool's hook (a profiler) in the same chain
        others.append(metadata.get()["name"])

    runtime.launch_enter_hook.add(other)
    recorder = LaunchRecorder()
    recorder.install()
    recorder.install()  # once only
    try:
        assert runtime.launch_enter_hook.calls.count(recorder._on_launch) == 1
        assert recorder._on_load in runtime.kernel_load_end_hook.calls
        recorder.begin("op")
        Runtime(compiled[1]).launch("k_op2")
        runtime.launch_enter_hook(LazyDict({"name": "odd"}))  # no function: unreadable
        runtime.kernel_load_end_hook(None, ["unhashable"], "k", {}, "h")
        assert names(recorder.end()) == ["?", "k_op2"]
        assert others == ["k_op2", "odd"]
    finally:
        recorder.uninstall()
        runtime.launch_enter_hook.remove(other)
    assert recorder._on_launch not in runtime.launch_enter_hook.calls
    assert recorder._on_load not in runtime.kernel_load_end_hook.calls


def test_a_recorder_of_one_side_records_only_the_launches_made_while_that_side_is_in_use(
    compiled: tuple[Path, dict[str, Any]],
) -> None:
    """A one-process worker has one recorder per side: each keeps the kernels launched while
    its side was in use, whichever side loaded them first."""
    _, kernels = compiled
    in_use = ["A"]
    recorders = {side: LaunchRecorder(lambda side=side: in_use[0] == side) for side in "AB"}
    for recorder in recorders.values():
        recorder.install()
    try:
        process = Runtime(kernels)
        for recorder in recorders.values():
            recorder.begin("op")
        process.launch("k_shared")  # side A loads and launches it
        process.launch("k_op1")
        in_use[0] = "B"
        process.launch("k_shared")  # loaded already: side B launches it too
        process.launch("k_op2")
        launched = {side: recorder.end() for side, recorder in recorders.items()}
    finally:
        for recorder in recorders.values():
            recorder.uninstall()
    assert names(launched["A"]) == ["k_op1", "k_shared"]
    assert names(launched["B"]) == ["k_op2", "k_shared"]
    assert all(k.hash is not None for side in "AB" for k in launched[side])


def test_a_kernel_compiled_outside_the_recorders_cache_has_unknown_ir(
    compiled: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """A one-process worker keeps a cache folder per side: a kernel one side launched from
    another side's folder was not compiled under that side's switch, so its IR cannot stand
    for the side (such a leak once read a changed mm as NO_IR_DIFF)."""
    from pytest_zlbench.recording.op_ir import OpIrRecorder

    cache, kernels = compiled
    in_use = ["B"]
    own = OpIrRecorder(cache, when=lambda: in_use[0] == "B")
    other = OpIrRecorder(tmp_path / "cache_B", when=lambda: in_use[0] == "B")
    try:
        for side in (own, other):
            side.begin("op")
        Runtime(kernels).launch("k_op1")
        for side, out in ((own, tmp_path / "own"), (other, tmp_path / "other")):
            out.mkdir()
            side.write(out)
    finally:
        own.uninstall()
        other.uninstall()
    import json

    mine = json.loads((tmp_path / "own" / "ir.json").read_text())
    theirs = json.loads((tmp_path / "other" / "ir.json").read_text())
    assert [e["kernel"] for e in mine["entries"]] == ["k_op1"]
    assert mine["unknown"] == []
    assert theirs["entries"] == []
    assert theirs["unknown"] == [
        {
            "kernel": "k_op1",
            "reason": f"compiled outside this side's cache folder ({tmp_path / 'cache_B'})",
        }
    ]
