"""The A/B screen on real Triton IR compiled on the CPU: a switch that acts below TTGIR.

Each side's test compiles a real kernel with Triton 3.6 into its run's own cache (the recipe of
``tests/data/triton_compile.py``), so the screen fingerprints real TTIR, TTGIR, LLVM IR, PTX and
cubin. ``TRITON_DEFAULT_FP_FUSION=0`` leaves TTGIR alone and changes PTX (``fma.rn`` splits into
``mul`` + ``add``): a TTGIR-only fingerprint read NO_IR_DIFF and skipped the later rounds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_zlbench.core import screening
from zl_testing import FAST_CPU_TIMER_CONFTEST, NO_HYPOTHESIS

pytestmark = pytest.mark.triton

DATA = Path(__file__).resolve().parent.parent / "data"
FMA_TEST = f"""
import subprocess
import sys

import pytest


@pytest.mark.fma
def test_fma(zl_bench):
    subprocess.run(
        [sys.executable, {str(DATA / "triton_compile.py")!r}, {str(DATA / "triton_kernels.py")!r},
         "fma_kernel"],
        check=True, capture_output=True,
    )
    zl_bench(lambda: sum(range(200)), op="fma", dtype="float32", shape="[1024]")
"""
CONFTEST = (
    FAST_CPU_TIMER_CONFTEST
    + """

def pytest_configure(config):
    config.addinivalue_line("markers", "fma: operator fma")
"""
)


def screen(pytester: pytest.Pytester, switch: str) -> tuple[pytest.RunResult, Path]:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_fma=FMA_TEST)
    root = pytester.path / "screen"
    result = pytester.runpytest_subprocess(
        "--zl-backend=cpu",
        "-p",
        "no:cacheprovider",
        *NO_HYPOTHESIS,
        f"--zl-out={root}",
        f"--zl-ab={switch}",
        "--zl-rounds=2",
        # the stand-in compiles in a subprocess outside the timed calls, which a one-process
        # worker (auto's mode for a compile-time switch) attributes to neither side
        "--zl-screen-mode=lockstep",
    )
    return result, root


def test_a_switch_acting_in_ptx_is_an_ir_change_at_that_stage(
    zl_pytester: pytest.Pytester,
) -> None:
    result, root = screen(zl_pytester, "TRITON_DEFAULT_FP_FUSION=0")
    result.assert_outcomes(passed=1)
    data = json.loads((root / "fma" / "ab.json").read_text())
    assert data["verdict"] == screening.IR_CHANGED
    assert data["stage"] == "ptx"
    assert data["ir_complete"] is True
    assert "fma_kernel" in data["kernels_changed"]
    # not skipped: both rounds measured
    assert data["rounds"] == 2
    assert (root / "fma" / "r2_A").is_dir()
    assert (root / "fma" / "r2_B").is_dir()


def test_a_switch_that_changes_nothing_skips_later_rounds(zl_pytester: pytest.Pytester) -> None:
    result, root = screen(zl_pytester, "ZLBENCH_TEST_UNUSED=1")
    result.assert_outcomes(passed=1)
    data = json.loads((root / "fma" / "ab.json").read_text())
    assert (data["verdict"], data["ir_complete"]) == (screening.NO_IR_DIFF, True)
    assert not (root / "fma" / "r2_A").exists()
