"""zlbench.compat: per-backend skip overrides.

The suite below reproduces the guards of FlagGems v5.3.4 files that ``ops/compat/musa.yaml``
names, with their exact reason strings and conditions, under a stub ``flag_gems`` whose
``vendor_name`` comes from ``FAKE_GEMS_VENDOR`` (default ``mthreads``) and a stub
``torch.cuda.is_available()`` that returns False, as on a MUSA host. The packaged
``musa.yaml`` is what these runs apply.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_zlbench.compat.session import compat_decision_key

# imported here, before any in-process run: pytester drops modules first imported inside a run
from pytest_zlbench.core import compat as core_compat
from zl_testing import NO_HYPOTHESIS, assert_usage_error

INI = (
    "[pytest]\nconsole_output_style = classic\n"
    "filterwarnings = ignore::pytest.PytestUnknownMarkWarning\n"
)

FLAG_GEMS = """
import os

vendor_name = os.environ.get("FAKE_GEMS_VENDOR", "mthreads")
device = {"mthreads": "musa", "nvidia": "cuda", "arm": "cpu"}.get(vendor_name, "cpu")
"""

FAKE_TORCH = """
class cuda:
    @staticmethod
    def is_available():
        return False
"""

BASE = """
import flag_gems


class Benchmark:
    device = flag_gems.device

    def __init__(self, op_name, torch_op=None, dtypes=None, **kwargs):
        self.op_name = op_name

    def run(self):
        return None


class GenericBenchmark(Benchmark):
    pass
"""

#: as v5.3.4's test_embedding_dense_backward.py, plus a near miss of the reason
EMBEDDING = """
import pytest
import _fake_torch as torch
import flag_gems

from . import base


@pytest.mark.skipif(
    (not torch.cuda.is_available()) or (flag_gems.device != "cuda"),
    reason="CUDA backend is not available for this benchmark.",
)
@pytest.mark.embedding_dense_backward
def test_embedding_dense_backward():
    base.GenericBenchmark(op_name="embedding_dense_backward").run()


@pytest.mark.skipif(True, reason="CUDA backend is not available")
@pytest.mark.near_miss
def test_near_miss():
    pass
"""

#: as v5.3.4's test_top_k_per_row_prefill.py (module-level pytestmark), with a second test
TOP_K = """
import pytest
import _fake_torch as torch

from . import base

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="CUDA device required",
)


class TopKPerRowPrefillBenchmark(base.Benchmark):
    pass


@pytest.mark.top_k_per_row_prefill
def test_top_k_per_row_prefill():
    TopKPerRowPrefillBenchmark(op_name="top_k_per_row_prefill").run()


@pytest.mark.top_k_per_row_prefill
def test_top_k_per_row_prefill_second():
    TopKPerRowPrefillBenchmark(op_name="top_k_per_row_prefill").run()
"""

#: as v5.3.4's test_FLA/test_chunk_gated_delta_rule_perf.py (no __init__.py, absolute import),
#: plus a test whose other guard must stay
FLA = """
import pytest
import flag_gems
from benchmark.base import Benchmark


class ChunkGatedDeltaRuleBenchmark(Benchmark):
    pass


@pytest.mark.skipif(flag_gems.device != "cuda", reason="benchmark requires CUDA device")
@pytest.mark.chunk_gated_delta_rule
def test_perf_chunk_gated_delta_rule():
    ChunkGatedDeltaRuleBenchmark(op_name="chunk_gated_delta_rule").run()


@pytest.mark.skipif(True, reason="vLLM not installed")
@pytest.mark.skipif(flag_gems.device != "cuda", reason="benchmark requires CUDA device")
@pytest.mark.chunk_gated_delta_rule_vllm
def test_needs_vllm_too():
    pass
"""

#: as v5.3.4's test_fft.py: a kept guard
FFT = """
import pytest
import _fake_torch as torch

from .base import Benchmark


class FFTBenchmark(Benchmark):
    pass


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
@pytest.mark.fft
def test_perf_fft():
    FFTBenchmark(op_name="fft").run()
"""

ABS = """
import pytest

from . import base


@pytest.mark.abs
def test_perf_abs():
    base.GenericBenchmark(op_name="abs").run()
"""

#: the outcomes on a MUSA host: without the overrides, and with them
SKIPPED_ALL = {"passed": 1, "skipped": 7}
LIFTED = {"passed": 5, "skipped": 3}
ACTIVE_LINE = (
    "zlbench compat: musa overrides active (flag_gems.vendor_name=mthreads): lifted 4 skips "
    "(4 guards removed); 1 still skipped by kept guards"
)


def write_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".ini", pytest=INI)
    pytester.makepyfile(flag_gems=FLAG_GEMS, _fake_torch=FAKE_TORCH)
    pytester.makeconftest("")  # rootdir conftest: puts the stubs on sys.path
    bench = pytester.mkpydir("benchmark")
    (bench / "conftest.py").write_text("import flag_gems  # noqa: F401  (as FlagGems does)\n")
    (bench / "base.py").write_text(BASE)
    (bench / "test_embedding_dense_backward.py").write_text(EMBEDDING)
    (bench / "test_top_k_per_row_prefill.py").write_text(TOP_K)
    (bench / "test_fft.py").write_text(FFT)
    (bench / "test_abs.py").write_text(ABS)
    (bench / "test_FLA").mkdir()
    (bench / "test_FLA" / "test_chunk_gated_delta_rule_perf.py").write_text(FLA)
    return pytester


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("FAKE_GEMS_VENDOR", raising=False)
    return write_suite(pytester)


def compat_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith("zlbench compat")]


def skip_reasons(result: pytest.RunResult) -> list[str]:
    return sorted(
        line.split(": ", 1)[1]
        for line in result.outlines
        if line.startswith("SKIPPED [") and ": " in line
    )


# --------------------------------------------------------------------------------------------
# lifting


def test_musa_overrides_lift_the_reproduced_guards(suite: pytest.Pytester) -> None:
    before = suite.runpytest("-rs", "benchmark")
    before.assert_outcomes(**SKIPPED_ALL)
    assert compat_lines(before) == []

    result = suite.runpytest("-rs", "--zl-backend=musa", "benchmark")
    result.assert_outcomes(**LIFTED)
    assert compat_lines(result) == [ACTIVE_LINE]
    assert skip_reasons(result) == [
        "CUDA backend is not available",  # a near miss of an override's reason: not lifted
        "CUDA is not available",  # kept: test_fft.py
        "vLLM not installed",  # the other guard of a lifted test
    ]


def test_exactly_the_lifted_tests_run(suite: pytest.Pytester) -> None:
    reprec = suite.inline_run("--zl-backend=musa", "benchmark")
    passed, skipped, failed = reprec.listoutcomes()
    assert failed == []
    assert sorted(r.nodeid.rsplit("::", 1)[1] for r in passed) == [
        "test_embedding_dense_backward",
        "test_perf_abs",
        "test_perf_chunk_gated_delta_rule",
        "test_top_k_per_row_prefill",  # the module-level mark is lifted for every test
        "test_top_k_per_row_prefill_second",
    ]
    assert sorted(r.nodeid.rsplit("::", 1)[1] for r in skipped) == [
        "test_near_miss",
        "test_needs_vllm_too",
        "test_perf_fft",
    ]


def test_alias_and_ini_select_musa(suite: pytest.Pytester) -> None:
    suite.runpytest("--zl-backend=mthreads", "benchmark").assert_outcomes(**LIFTED)
    suite.makefile(".ini", pytest=INI + "zl_backend = mt\n")
    result = suite.runpytest("benchmark")
    result.assert_outcomes(**LIFTED)
    assert compat_lines(result) == [ACTIVE_LINE]


@pytest.mark.parametrize("vendor", ["nvidia", "arm", "kunlunxin"])
def test_inactive_when_flaggems_reports_another_vendor(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, vendor: str
) -> None:
    monkeypatch.setenv("FAKE_GEMS_VENDOR", vendor)
    plain = suite.runpytest("-rs", "benchmark")
    result = suite.runpytest("-rs", "--zl-backend=musa", "benchmark")
    assert result.parseoutcomes() == plain.parseoutcomes()
    assert skip_reasons(result) == skip_reasons(plain)
    assert compat_lines(result) == [
        f"zlbench compat: musa overrides inactive: flag_gems.vendor_name is {vendor!r}, "
        "not 'mthreads'"
    ]


@pytest.mark.parametrize("backend", ["cuda", "cpu", "rocm", "ascend"])
def test_overrides_never_leak_to_other_backends(suite: pytest.Pytester, backend: str) -> None:
    """Even with FlagGems reporting mthreads, another backend applies nothing and says nothing."""
    result = suite.runpytest("-rs", f"--zl-backend={backend}", "benchmark")
    result.assert_outcomes(**SKIPPED_ALL)
    assert compat_lines(result) == []
    assert "CUDA device required" in skip_reasons(result)


def test_inert_without_backend(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-rs", "benchmark")
    result.assert_outcomes(**SKIPPED_ALL)
    assert [line for line in result.outlines if "zlbench" in line and "plugins:" not in line] == []


def test_disabled_plugin_lifts_nothing(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "no:zlbench.compat", "--zl-backend=musa", "benchmark")
    result.assert_outcomes(**SKIPPED_ALL)
    assert compat_lines(result) == []


def test_inactive_without_flag_gems(pytester: pytest.Pytester) -> None:
    pytester.makefile(".ini", pytest=INI)
    pytester.makepyfile(
        test_plain="import pytest\n\n@pytest.mark.skipif(True, reason='CUDA required')\n"
        "def test_a():\n    pass\n"
    )
    result = pytester.runpytest("--zl-backend=musa")
    result.assert_outcomes(skipped=1)
    assert compat_lines(result) == [
        "zlbench compat: musa overrides inactive: flag_gems is not imported by the suite"
    ]


def test_quiet_keeps_only_problems(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-q", "--zl-backend=musa", "benchmark")
    result.assert_outcomes(**LIFTED)
    assert compat_lines(result) == []


def test_decision_is_kept_on_the_item(suite: pytest.Pytester) -> None:
    items, _ = suite.inline_genitems("--zl-backend=musa", "benchmark")
    decisions = {item.name: item.stash[compat_decision_key] for item in items}
    assert decisions["test_top_k_per_row_prefill_second"] == ("CUDA device required",)
    assert decisions["test_needs_vllm_too"] == ("benchmark requires CUDA device",)
    assert decisions["test_perf_fft"] == ()
    assert decisions["test_near_miss"] == ()


# --------------------------------------------------------------------------------------------
# ordering: before anything else reads the item list

RECORDER = """
import json

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    seen = {
        item.name: sorted(m.kwargs.get("reason", "") for m in item.iter_markers("skipif"))
        for item in items
    }
    with open("seen_tryfirst.json", "w") as f:
        json.dump(seen, f)
"""


def test_lift_happens_before_other_modifyitems_hooks(suite: pytest.Pytester) -> None:
    """A conftest's tryfirst ``pytest_collection_modifyitems`` (which pluggy calls before an
    installed plugin's tryfirst one) already sees the lifted item list: the lift runs in the
    first half of a tryfirst wrapper."""
    suite.makeconftest(RECORDER)
    suite.runpytest("--zl-backend=musa", "benchmark").assert_outcomes(**LIFTED)
    seen = json.loads((suite.path / "seen_tryfirst.json").read_text())
    assert seen["test_top_k_per_row_prefill"] == []
    assert seen["test_perf_chunk_gated_delta_rule"] == []
    assert seen["test_needs_vllm_too"] == ["vLLM not installed"]
    assert seen["test_perf_fft"] == ["CUDA is not available"]


def test_hook_is_a_tryfirst_wrapper(suite: pytest.Pytester) -> None:
    config = suite.parseconfigure("--zl-backend=musa")
    impls = config.hook.pytest_collection_modifyitems.get_hookimpls()
    ours = [i for i in impls if type(i.plugin).__name__ == "CompatSession"]
    assert len(ours) == 1
    assert ours[0].wrapper
    assert ours[0].tryfirst
    # pluggy runs wrappers from the end of this list: nothing wraps outside ours but
    # tryfirst wrappers registered after it (none here)
    wrappers = [i for i in impls if i.wrapper or i.hookwrapper]
    assert all(i.tryfirst for i in wrappers[wrappers.index(ours[0]) :])


# --------------------------------------------------------------------------------------------
# stale overrides

STALE_RULES = """
schema: 1
backend: musa
flaggems: test
overrides:
  - file: test_top_k_per_row_prefill.py
    reason: "CUDA device required"
    source: reasoned
    why: still there
  - file: test_gone.py
    reason: "CUDA required"
    source: reasoned
    why: the file was deleted upstream
  - file: test_fft.py
    reason: "CUDA unavailable"
    source: probed
    why: the reason was reworded upstream
  - file: test_embedding_dense_backward.py
    reason: "renamed"
    source: reasoned
    why: this file is outside the collection; checked statically
keep: []
"""


@pytest.fixture
def stale_rules(
    suite: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    rules = tmp_path / "compat"
    rules.mkdir()
    (rules / "musa.yaml").write_text(STALE_RULES)
    monkeypatch.setattr(core_compat, "COMPAT_DIR", rules)
    return suite


STALE_LINES = [
    "zlbench compat: stale override test_gone.py 'CUDA required': file absent from the "
    "benchmark directory",
    "zlbench compat: stale override test_fft.py 'CUDA unavailable': no skip guard in that file "
    "has this reason",
    "zlbench compat: stale override test_embedding_dense_backward.py 'renamed': no skip guard "
    "in that file has this reason",
]


def test_stale_overrides_are_listed(stale_rules: pytest.Pytester) -> None:
    paths = ("benchmark/test_top_k_per_row_prefill.py", "benchmark/test_fft.py")
    result = stale_rules.runpytest("--zl-backend=musa", *paths)
    result.assert_outcomes(passed=2, skipped=1)
    assert compat_lines(result) == [
        "zlbench compat: musa overrides active (flag_gems.vendor_name=mthreads): lifted 2 skips "
        "(1 guard removed)",
        *STALE_LINES,
    ]
    quiet = stale_rules.runpytest("-q", "--zl-backend=musa", *paths)
    assert compat_lines(quiet) == STALE_LINES  # problems are never silent


def test_malformed_rules_are_a_usage_error(
    suite: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "musa.yaml").write_text("schema: 1\nbackend: musa\nflaggems: x\noverrides: 3\n")
    monkeypatch.setattr(core_compat, "COMPAT_DIR", tmp_path)
    result = suite.runpytest("--zl-backend=musa", "benchmark")
    assert_usage_error(result, "zlbench compat:", "musa.yaml", "'overrides' must be a list")


# --------------------------------------------------------------------------------------------
# xdist: the workers collect and lift


def test_under_xdist(suite: pytest.Pytester) -> None:
    top_k = suite.path / "benchmark" / "test_top_k_per_row_prefill.py"
    result = suite.runpytest_subprocess(
        "-n", "2", "-p", "no:cacheprovider", *NO_HYPOTHESIS, "--zl-backend=musa", "benchmark"
    )
    result.assert_outcomes(**LIFTED)
    result.stdout.fnmatch_lines(["zlbench compat: lifted 4 skips on xdist workers"])

    top_k.write_text(TOP_K.replace('"CUDA device required"', '"CUDA device needed"'))
    result = suite.runpytest_subprocess(
        "-n", "2", "-p", "no:cacheprovider", *NO_HYPOTHESIS, "--zl-backend=musa", "benchmark"
    )
    result.assert_outcomes(passed=3, skipped=5, warnings=2)
    result.stdout.fnmatch_lines(
        [
            "*ZlbenchCompatWarning: zlbench compat: stale override "
            "test_top_k_per_row_prefill.py 'CUDA device required': no skip guard in that file "
            "has this reason*"
        ]
    )
