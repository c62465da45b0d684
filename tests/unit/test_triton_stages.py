"""Per-stage fingerprints of REAL Triton 3.6 output, compiled on a CPU-only host.

The wheel's bundled ptxas lets the CPU compile all the way to the cubin for sm_90 (source, TTIR,
TTGIR, LLVM IR, PTX, cubin); AMD targets compile to ``.amdgcn`` and ``.hsaco`` with the wheel's
own linker. Each configuration compiles in its own process with its own ``TRITON_CACHE_DIR``
(switches are read at compile time; see ``test_triton_ttgir.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_zlbench.adapters.triton_ir import nodebug_text
from pytest_zlbench.core.fingerprint import IrReport, compare, compare_stages, scan_cache

triton = pytest.importorskip("triton")

pytestmark = pytest.mark.triton

DATA = Path(__file__).resolve().parent.parent / "data"
KERNELS = DATA / "triton_kernels.py"
HELPER = DATA / "triton_compile.py"
NAMES = ("add_kernel", "fma_kernel", "matmul_kernel")
CLEARED_PREFIXES = ("TRITON_", "DISABLE_", "MLIR_", "LLVM_", "NVPTX_", "AMDGCN_", "FLAGTREE_")
CLEARED_NAMES = ("ALLOW_LHS_TMEM_LAYOUT_CONVERSION", "USE_IR_LOC", "PYTHONHASHSEED")
METHODS = {"nodebug": nodebug_text, "stripped": None}
NVIDIA = ("source", "ttir", "ttgir", "llir", "ptx", "cubin", "launch")
AMD = ("source", "ttir", "ttgir", "llir", "amdgcn", "hsaco", "launch")
AMD_TARGET = "--target=hip:gfx942:64"

# side -> (kernel file, environment, extra helper arguments)
SIDES: dict[str, tuple[str, dict[str, str], tuple[str, ...]]] = {
    "base": ("src", {}, ()),
    "moved": ("moved", {"PYTHONHASHSEED": "12345"}, ()),
    "fp_fusion_off": ("src", {"TRITON_DEFAULT_FP_FUSION": "0"}, ()),
    "llvm_opt_off": ("src", {"DISABLE_LLVM_OPT": "1"}, ()),
    "ptxas_opt_off": ("src", {"DISABLE_PTXAS_OPT": "1"}, ()),
    "mma_v2": ("src", {"DISABLE_MMA_V3": "1"}, ()),
    "amd": ("src", {}, (AMD_TARGET,)),
    "amd_moved": ("moved", {}, (AMD_TARGET,)),
}


def start(tmp: Path, side: str, kernels: Path, env_extra: dict[str, str], args: tuple[str, ...]):
    cache = tmp / side / "cache"
    cache.mkdir(parents=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(CLEARED_PREFIXES) and k not in CLEARED_NAMES
    }
    env.update(TRITON_HOME=str(tmp / side), TRITON_CACHE_DIR=str(cache), **env_extra)
    cmd = [sys.executable, str(HELPER), *args, str(kernels), *NAMES]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return side, cache, proc


def finish(started) -> dict[str, Path]:
    caches = {}
    for side, cache, proc in started:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"compile of side {side!r} failed:\n{err[-3000:]}"
        assert set(json.loads(out)) == set(NAMES)
        caches[side] = cache
    return caches


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, Path]:
    """Cache roots of the same three kernels compiled per :data:`SIDES`, plus ``shifted``: the
    file at ``src/`` again with a comment line inserted above the kernels (line numbers move)."""
    tmp = tmp_path_factory.mktemp("stages")
    files = {
        "src": tmp / "src" / "triton_kernels.py",
        "moved": tmp / "x" / "y" / "triton_kernels.py",
    }
    for path in files.values():
        path.parent.mkdir(parents=True)
        shutil.copyfile(KERNELS, path)
    result = finish([start(tmp, side, files[f], env, a) for side, (f, env, a) in SIDES.items()])
    text = files["src"].read_text(encoding="utf-8")
    first = text.index("@triton.jit")
    files["src"].write_text(text[:first] + "# shifts every kernel down a line\n" + text[first:])
    return result | finish([start(tmp, "shifted", files["src"], {}, ())])


@pytest.fixture(scope="module")
def reports(caches) -> dict[tuple[str, str], IrReport]:
    return {
        (side, method): scan_cache(root, fn)
        for side, root in caches.items()
        for method, fn in METHODS.items()
    }


def raw(root: Path, kernel: str, suffix: str) -> bytes:
    (path,) = root.glob(f"*/{kernel}{suffix}")
    return path.read_bytes()


def test_every_stage_is_recorded(reports):
    for (side, method), report in reports.items():
        assert report.method == method
        expected = AMD if side.startswith("amd") else NVIDIA
        for entry in report.entries:
            assert entry.stages is not None
            assert tuple(s for s, _ in entry.stages) == expected, (side, entry.kernel)
            assert dict(entry.stages)["ttgir"] == entry.hash


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("a", "b"), [("base", "moved"), ("base", "shifted"), ("amd", "amd_moved")])
def test_same_code_in_another_process_is_identical_at_every_stage(caches, reports, method, a, b):
    """Another directory, another line, another PYTHONHASHSEED and another cache: the raw files
    differ (paths and line numbers in the debug info) but every normalised stage is the same."""
    suffixes = (".llir", ".amdgcn", ".hsaco") if a == "amd" else (".llir", ".ptx", ".cubin")
    for kernel in NAMES:
        for suffix in suffixes:
            assert raw(caches[a], kernel, suffix) != raw(caches[b], kernel, suffix)
    diff = compare_stages(reports[a, method], reports[b, method])
    assert diff.identical, diff.describe()
    assert diff.complete
    assert diff.compared == (AMD if a == "amd" else NVIDIA)
    per_kernel = [
        sorted((e.kernel, e.stages) for e in reports[side, method].entries) for side in (a, b)
    ]
    assert per_kernel[0] == per_kernel[1]


@pytest.mark.parametrize("method", METHODS)
def test_fp_fusion_off_differs_first_at_ptx(reports, method):
    """TRITON_DEFAULT_FP_FUSION=0 leaves TTIR, TTGIR and LLVM IR alone: contraction is decided
    by LLVM's NVPTX instruction selection (``fma.rn`` vs ``mul``+``add``, ``.rn`` on every add)
    and by ptxas ``--fmad=false``. A TTGIR fingerprint reads "no change"."""
    base, side = reports["base", method], reports["fp_fusion_off", method]
    ttgir = compare(base, side)
    assert not ttgir.changed  # the finding: a TTGIR-only screen would report NO_IR_DIFF
    diff = ttgir.stages
    assert diff is not None
    assert (diff.first, diff.complete) == ("ptx", True)
    assert "fma_kernel" in diff.kernels
    assert diff.describe().startswith("IR first differs at ptx (")
    assert diff.describe().endswith("; source, ttir, ttgir, llir identical")
    assert "fma_kernel" in diff.kernels_at("cubin")


def test_fp_fusion_off_really_splits_the_fma(caches):
    def ptx(side: str) -> str:
        return raw(caches[side], "fma_kernel", ".ptx").decode()

    assert "fma.rn.f32" in ptx("base")
    assert "fma.rn.f32" not in ptx("fp_fusion_off")
    assert "mul.rn.f32" in ptx("fp_fusion_off")


@pytest.mark.parametrize("method", METHODS)
def test_llvm_opt_off_differs_first_at_llvm_ir(reports, method):
    diff = compare_stages(reports["base", method], reports["llvm_opt_off", method])
    assert (diff.first, diff.kernels) == ("llir", NAMES)
    assert diff.compared[: diff.compared.index("llir")] == ("source", "ttir", "ttgir")
    assert not compare(reports["base", method], reports["llvm_opt_off", method]).changed


@pytest.mark.parametrize("method", METHODS)
def test_ptxas_opt_off_differs_first_at_the_cubin(reports, method):
    """DISABLE_PTXAS_OPT=1 acts in the assembler only: every text stage is identical and only the
    cubin's code differs (its debug sections are not what differs: they are left out)."""
    diff = compare_stages(reports["base", method], reports["ptxas_opt_off", method])
    assert (diff.first, diff.kernels) == ("cubin", NAMES)
    assert diff.changed == (("cubin", NAMES),)


@pytest.mark.parametrize("method", METHODS)
def test_mma_v3_off_differs_first_at_ttgir_on_the_dot_kernel(reports, method):
    diff = compare_stages(reports["base", method], reports["mma_v2", method])
    assert (diff.first, diff.kernels) == ("ttgir", ("matmul_kernel",))
    assert diff.describe() == "IR first differs at ttgir (matmul_kernel); source, ttir identical"
    for stage, kernels in diff.changed:  # the other kernels stay identical all the way down
        assert kernels == ("matmul_kernel",), stage


def test_mma_v3_off_changes_the_dot_kernel_s_launch_settings(caches, reports):
    """MMA v2 instead of wgmma: the matmul kernel is launched with less shared memory (its
    metadata .json beside the IR), which the launch stage sees; the other kernels' settings stay."""

    def shared(side: str) -> int:
        return json.loads(raw(caches[side], "matmul_kernel", ".json"))["shared"]

    assert shared("mma_v2") != shared("base")
    diff = compare_stages(reports["base", "nodebug"], reports["mma_v2", "nodebug"])
    assert diff.kernels_at("launch") == ("matmul_kernel",)
    for side in ("fp_fusion_off", "llvm_opt_off", "ptxas_opt_off", "moved"):
        other = compare_stages(reports["base", "nodebug"], reports[side, "nodebug"])
        assert other.kernels_at("launch") == (), side


def test_per_stage_ir_json_round_trips_and_old_records_compare_as_ttgir_only(reports, tmp_path):
    report = reports["base", "nodebug"]
    path = tmp_path / "ir.json"
    report.write(path)
    assert IrReport.read(path) == report
    data = json.loads(path.read_text())
    for e in data["entries"]:
        del e["stages"]  # what an ir.json written before stage hashes looks like
    path.write_text(json.dumps(data))
    old = IrReport.read(path)
    diff = compare_stages(old, reports["fp_fusion_off", "nodebug"])
    assert (diff.compared, diff.identical, diff.ttgir_only, diff.complete) == (
        ("ttgir",),
        True,
        True,
        False,
    )
    assert "TTGIR only" in diff.describe()
