"""Fingerprints of REAL Triton 3.6 TTGIR, compiled for sm_90 on a CPU-only host.

Each configuration compiles in its own process (``tests/data/triton_compile.py``) with its own
``TRITON_CACHE_DIR``: switches such as ``DISABLE_MMA_V3`` are read at compile time and compiled
kernels are cached in-process, so flipping them inside one process would reuse the old kernel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_zlbench.adapters.triton_ir import nodebug_text, triton_version
from pytest_zlbench.core.fingerprint import IrReport, compare, scan_cache

triton = pytest.importorskip("triton")

pytestmark = pytest.mark.triton

DATA = Path(__file__).resolve().parent.parent / "data"
KERNELS = DATA / "triton_kernels.py"
HELPER = DATA / "triton_compile.py"
NAMES = ("add_kernel", "matmul_kernel")
# Environment variables that steer Triton's compile or cache; none may leak in from the caller.
CLEARED_PREFIXES = ("TRITON_", "DISABLE_", "MLIR_", "LLVM_", "NVPTX_", "AMDGCN_", "FLAGTREE_")
CLEARED_NAMES = ("ALLOW_LHS_TMEM_LAYOUT_CONVERSION", "USE_IR_LOC")
METHODS = {"nodebug": nodebug_text, "stripped": None}


def compile_env(home: Path, cache: Path, switches: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(CLEARED_PREFIXES) and k not in CLEARED_NAMES
    }
    env.update(TRITON_HOME=str(home), TRITON_CACHE_DIR=str(cache), **switches)
    return env


def start_compile(tmp: Path, side: str, kernels: Path, switches: dict[str, str], names=NAMES):
    cache = tmp / side / "cache"
    cache.mkdir(parents=True)
    proc = subprocess.Popen(
        [sys.executable, str(HELPER), str(kernels), *names],
        env=compile_env(tmp / side, cache, switches),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return side, cache, proc


def finish(started) -> dict[str, Path]:
    outputs = [(side, cache, proc, *proc.communicate(timeout=300)) for side, cache, proc in started]
    caches = {}
    for side, cache, proc, out, err in outputs:
        assert proc.returncode == 0, f"compile of side {side!r} failed:\n{err[-3000:]}"
        assert set(json.loads(out)) >= set(NAMES)
        caches[side] = cache
    return caches


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, Path]:
    """Cache roots of four compiles of the same two kernels.

    * ``base``: the kernel file at ``src/``;
    * ``mma_v2``: the same file, with ``DISABLE_MMA_V3=1``;
    * ``moved``: an identical copy in another directory;
    * ``shifted``: the file at ``src/`` again, with a comment line inserted above the kernels;
    * ``respec``: like ``base``, plus ``add_kernel`` specialised for an ``n_elements`` that is not
      divisible by 16 (what a runtime value does to the variant set, with no switch).
    """
    tmp = tmp_path_factory.mktemp("ttgir")
    src = tmp / "src" / "triton_kernels.py"
    moved = tmp / "elsewhere" / "deeper" / "triton_kernels.py"
    for path in (src, moved):
        path.parent.mkdir(parents=True)
        shutil.copyfile(KERNELS, path)
    started = [
        start_compile(tmp, "base", src, {}),
        start_compile(tmp, "mma_v2", src, {"DISABLE_MMA_V3": "1"}),
        start_compile(tmp, "moved", moved, {}),
        start_compile(tmp, "respec", src, {}, (*NAMES, "add_kernel@odd_n")),
    ]
    result = finish(started)
    # Same path as base, so only the line numbers differ; written once base has compiled.
    text = src.read_text(encoding="utf-8")
    first = text.index("@triton.jit")
    src.write_text(text[:first] + "# a comment that shifts every kernel down\n" + text[first:])
    result |= finish([start_compile(tmp, "shifted", src, {})])
    return result


@pytest.fixture(scope="module")
def reports(caches) -> dict[tuple[str, str], IrReport]:
    return {
        (side, method): scan_cache(root, fn)
        for side, root in caches.items()
        for method, fn in METHODS.items()
    }


def raw_ttgir(root: Path, kernel: str) -> str:
    (path,) = root.glob(f"*/{kernel}.ttgir")
    return path.read_text(encoding="utf-8")


def test_reports_use_the_requested_method(reports):
    for (_side, method), report in reports.items():
        assert report.method == method
        assert {e.method for e in report.entries} == {method}
        kernels = sorted(e.kernel for e in report.entries)
        assert kernels == sorted([*NAMES, *(["add_kernel"] if _side == "respec" else [])])
        assert report.triton_version == triton.__version__ == triton_version()
        for entry in report.entries:
            assert (entry.num_warps, entry.num_stages, entry.num_ctas) == (4, 3, 1)


def test_nodebug_text_has_no_locations_or_paths(caches):
    for kernel in NAMES:
        (path,) = caches["base"].glob(f"*/{kernel}.ttgir")
        text = nodebug_text(str(path))
        assert text is not None
        assert "loc(" not in text
        assert "triton_kernels.py" not in text
        assert f"@{kernel}(" in text


@pytest.mark.parametrize("method", METHODS)
def test_mma_switch_changes_the_dot_kernel_only(reports, method):
    diff = compare(reports["base", method], reports["mma_v2", method])
    assert diff.changed
    assert diff.kernels_changed == ("matmul_kernel",)
    assert (diff.kernels_a, diff.kernels_b) == (2, 2)
    fa = reports["base", method].fingerprint()
    fb = reports["mma_v2", method].fingerprint()
    assert fa["add_kernel"] == fb["add_kernel"]
    assert fa["matmul_kernel"] != fb["matmul_kernel"]


def test_mma_switch_renames_every_cache_directory(caches):
    def dirs(root: Path) -> dict[str, str]:
        return {p.parent.name: p.stem for p in root.glob("*/*.ttgir")}

    base, mma = dirs(caches["base"]), dirs(caches["mma_v2"])
    assert sorted(base.values()) == sorted(mma.values()) == list(NAMES)
    assert not set(base) & set(mma)  # even add_kernel's directory, whose TTGIR is unchanged


def test_mma_switch_is_recorded_in_the_metadata(caches):
    for kernel in NAMES:
        (base,) = caches["base"].glob(f"*/{kernel}.json")
        (mma,) = caches["mma_v2"].glob(f"*/{kernel}.json")
        assert "DISABLE_MMA_V3" not in json.loads(base.read_text())
        assert "DISABLE_MMA_V3" in json.loads(mma.read_text())


def test_mma_switch_changes_the_mma_layout(caches):
    def text(side: str) -> str:
        (path,) = caches[side].glob("*/matmul_kernel.ttgir")
        result = nodebug_text(str(path))
        assert result is not None
        return result

    assert "versionMajor = 3" in text("base")
    assert "versionMajor = 2" in text("mma_v2")


@pytest.mark.parametrize("side", ["moved", "shifted"])
@pytest.mark.parametrize("method", METHODS)
def test_source_location_changes_keep_the_fingerprint(caches, reports, side, method):
    for kernel in NAMES:  # the raw bytes differ: absolute paths and line numbers in locs
        assert raw_ttgir(caches["base"], kernel) != raw_ttgir(caches[side], kernel)
    diff = compare(reports["base", method], reports[side, method])
    assert not diff.changed, diff
    assert reports["base", method].fingerprint() == reports[side, method].fingerprint()


def test_convert_layout_counts_are_recorded(reports, tmp_path):
    for method in METHODS:
        report = reports["base", method]
        counts = {e.kernel: e.convert_layout for e in report.entries}
        assert counts["matmul_kernel"] > 0
        assert counts["add_kernel"] == 0
        diff = compare(report, reports["mma_v2", method])
        assert diff.convert_layout_a == report.convert_layout_total() == counts["matmul_kernel"]
        assert diff.convert_layout_b == reports["mma_v2", method].convert_layout_total() > 0
        path = tmp_path / f"ir-{method}.json"
        report.write(path)
        assert IrReport.read(path) == report
        written = json.loads(path.read_text())
        assert {e["kernel"]: e["convert_layout"] for e in written["entries"]} == counts
    # both methods count the same ops
    nodebug = {e.kernel: e.convert_layout for e in reports["base", "nodebug"].entries}
    stripped = {e.kernel: e.convert_layout for e in reports["base", "stripped"].entries}
    assert nodebug == stripped


def test_methods_are_never_compared(reports):
    with pytest.raises(ValueError, match="method"):
        compare(reports["base", "nodebug"], reports["base", "stripped"])


def test_nodebug_falls_back_when_triton_cannot_parse(caches, tmp_path):
    (path,) = caches["base"].glob("*/add_kernel.ttgir")
    garbage = tmp_path / "garbage" / "k.ttgir"
    garbage.parent.mkdir()
    garbage.write_text("this is not MLIR {\n")
    assert nodebug_text(str(garbage)) is None
    assert nodebug_text(str(tmp_path / "missing.ttgir")) is None
    assert scan_cache(tmp_path / "garbage", nodebug_text).method == "stripped"

    # Written by another Triton version (dialect syntax is version-specific): not re-parsed.
    other = tmp_path / "other" / path.parent.name
    shutil.copytree(path.parent, other)
    meta = json.loads((other / "add_kernel.json").read_text())
    (other / "add_kernel.json").write_text(json.dumps(meta | {"triton_version": "0.0.0"}))
    assert nodebug_text(str(other / "add_kernel.ttgir")) is None
    report = scan_cache(tmp_path / "other", nodebug_text)
    assert (report.method, report.triton_version) == ("stripped", "0.0.0")
    with pytest.raises(ValueError, match="Triton version"):
        compare(report, scan_cache(caches["base"]))


@pytest.mark.parametrize("method", METHODS)
def test_a_new_specialisation_is_told_apart_from_changed_code(reports, method):
    """A second specialisation of add_kernel (a runtime value, no switch) changes its variant
    set; it is flagged as specialisation-only. The MMA switch changes the code of a shared
    specialisation, which is not."""
    base = reports["base", method]
    respec = compare(base, reports["respec", method])
    assert respec.kernels_changed == ("add_kernel",)
    assert respec.specialisation_only == ("add_kernel",)
    variants = [e for e in reports["respec", method].entries if e.kernel == "add_kernel"]
    assert len({e.signature for e in variants}) == 2
    mma = compare(base, reports["mma_v2", method])
    assert mma.kernels_changed == ("matmul_kernel",)
    assert mma.specialisation_only == ()
