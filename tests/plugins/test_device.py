"""zlbench.device: ``--zl-backend``, ``--zl-devices``, the backend registry, xdist card pinning."""

from __future__ import annotations

import os

import pytest

from pytest_zlbench._common import device_settings_key
from zl_testing import NO_HYPOTHESIS, assert_usage_error

VALID = ("cuda", "musa", "rocm", "ascend", "cpu")

#: records the visibility variable as the conftest is imported, one file per process
VISIBILITY_CONFTEST = """
import os

_worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
with open(f"visible_{_worker}.txt", "w") as _f:
    _f.write(os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"))
"""


@pytest.fixture
def one_test(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makepyfile(test_one="def test_one():\n    pass\n")
    return zl_pytester


# --------------------------------------------------------------------------------------------
# --zl-backend


def test_unknown_backend_is_a_one_line_usage_error(one_test: pytest.Pytester) -> None:
    result = one_test.runpytest("--zl-backend=bogus")
    line = assert_usage_error(result, "--zl-backend", "'bogus'")
    for name in VALID:
        assert name in line


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("cuda", "cuda"),
        ("nvidia", "cuda"),
        ("MT", "musa"),
        ("hip", "rocm"),
        ("huawei", "ascend"),
        ("cpu", "cpu"),
    ],
)
def test_backend_names_and_aliases(one_test: pytest.Pytester, given: str, expected: str) -> None:
    result = one_test.runpytest(f"--zl-backend={given}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"zlbench: backend={expected}"])


def test_backend_resolves_into_the_stash(zl_pytester: pytest.Pytester) -> None:
    config = zl_pytester.parseconfigure("--zl-backend=mthreads")
    settings = config.stash[device_settings_key]
    assert settings.backend.name == "musa"
    assert settings.devices == ()
    assert settings.pinned is None


def test_ini_twin(one_test: pytest.Pytester) -> None:
    one_test.makefile(".ini", pytest="[pytest]\nconsole_output_style = classic\nzl_backend = cpu\n")
    result = one_test.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["zlbench: backend=cpu"])


def test_command_line_wins_over_ini(one_test: pytest.Pytester) -> None:
    one_test.makefile(
        ".ini", pytest="[pytest]\nconsole_output_style = classic\nzl_backend = bogus\n"
    )
    result = one_test.runpytest("--zl-backend=nvidia")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["zlbench: backend=cuda"])
    # and the ini value alone is validated like the option
    result = one_test.runpytest()
    assert_usage_error(result, "'bogus'")


def test_backend_registered_from_a_conftest(one_test: pytest.Pytester) -> None:
    one_test.makeconftest(
        """
        from pytest_zlbench.core.backends import Backend

        def pytest_zlbench_device_register(registry):
            registry.add(Backend(
                name="xpu", torch_device="xpu", torch_module="torch.xpu",
                visibility_var="ZE_AFFINITY_MASK", graph_capture=False, vendor="intel",
                flagtree_prefix="FLAGTREE_XPU_", aliases=("intel",)))
        """
    )
    result = one_test.runpytest("--zl-backend=Intel")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["zlbench: backend=xpu"])
    result = one_test.runpytest("--zl-backend=bogus")
    assert_usage_error(result, "xpu", "cuda")


def test_backend_registration_conflict_is_a_usage_error(one_test: pytest.Pytester) -> None:
    one_test.makeconftest(
        """
        import dataclasses
        from pytest_zlbench.core.backends import BUILTIN_BACKENDS

        def pytest_zlbench_device_register(registry):
            registry.add(dataclasses.replace(BUILTIN_BACKENDS[1], name="mine",
                                             aliases=("nvidia",)))
        """
    )
    result = one_test.runpytest("--zl-backend=cpu")
    assert_usage_error(result, "'nvidia' already names backend 'cuda'")


def test_no_option_means_no_device_settings(zl_pytester: pytest.Pytester) -> None:
    config = zl_pytester.parseconfigure()
    assert device_settings_key not in config.stash


# --------------------------------------------------------------------------------------------
# --zl-devices


@pytest.mark.parametrize(
    ("value", "needle"),
    [("0,,1", "''"), ("a", "'a'"), ("0,0", "listed twice"), ("", "empty"), ("-1", "'-1'")],
)
def test_bad_devices_are_a_one_line_usage_error(
    one_test: pytest.Pytester, value: str, needle: str
) -> None:
    result = one_test.runpytest("--zl-backend=cuda", f"--zl-devices={value}")
    assert_usage_error(result, "--zl-devices", needle)


def test_devices_on_the_cpu_backend_are_refused(one_test: pytest.Pytester) -> None:
    result = one_test.runpytest("--zl-backend=cpu", "--zl-devices=0")
    assert_usage_error(result, "--zl-devices", "cpu")


def test_devices_without_xdist_pin_all_cards(one_test: pytest.Pytester) -> None:
    one_test.makeconftest(VISIBILITY_CONFTEST)
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    result = one_test.runpytest("--zl-backend=cuda", "--zl-devices=0,1")
    result.assert_outcomes(passed=1)
    assert (one_test.path / "visible_main.txt").read_text() == "0,1"
    result.stdout.fnmatch_lines(["zlbench: backend=cuda devices=0,1 (CUDA_VISIBLE_DEVICES=0,1)"])
    # in-process: the variable is restored at unconfigure
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == before


@pytest.mark.parametrize(
    ("backend", "var"),
    [
        ("rocm", "HIP_VISIBLE_DEVICES"),
        ("musa", "MUSA_VISIBLE_DEVICES"),
        ("ascend", "ASCEND_RT_VISIBLE_DEVICES"),
    ],
)
def test_devices_use_the_backend_visibility_variable(
    one_test: pytest.Pytester, backend: str, var: str
) -> None:
    one_test.makeconftest(
        f"""
        import os

        def test_seen():
            pass

        def pytest_configure(config):
            with open("seen.txt", "w") as f:
                f.write(os.environ.get({var!r}, "<unset>"))
        """
    )
    before = os.environ.get(var)
    result = one_test.runpytest(f"--zl-backend={backend}", "--zl-devices=3")
    result.assert_outcomes(passed=1)
    assert (one_test.path / "seen.txt").read_text() == "3"
    assert os.environ.get(var) == before


def test_devices_ini_twin(one_test: pytest.Pytester) -> None:
    one_test.makeconftest(VISIBILITY_CONFTEST)
    one_test.makefile(
        ".ini",
        pytest="[pytest]\nconsole_output_style = classic\nzl_backend = cuda\nzl_devices = 2,3\n",
    )
    result = one_test.runpytest()
    result.assert_outcomes(passed=1)
    assert (one_test.path / "visible_main.txt").read_text() == "2,3"


def test_xdist_workers_are_pinned_before_conftests_import(one_test: pytest.Pytester) -> None:
    """gwK sees card LIST[K % len] when its initial conftests are imported."""
    one_test.makeconftest(VISIBILITY_CONFTEST)
    one_test.makepyfile(test_more="def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    result = one_test.runpytest_subprocess(
        "--zl-backend=cuda", "--zl-devices=0,1", "-n", "2", "-p", "no:cacheprovider", *NO_HYPOTHESIS
    )
    result.assert_outcomes(passed=3)
    assert (one_test.path / "visible_gw0.txt").read_text() == "0"
    assert (one_test.path / "visible_gw1.txt").read_text() == "1"
    assert (one_test.path / "visible_main.txt").read_text() == "0,1"


def test_xdist_workers_wrap_around_the_card_list(one_test: pytest.Pytester) -> None:
    one_test.makeconftest(VISIBILITY_CONFTEST)
    result = one_test.runpytest_subprocess(
        "--zl-backend=cuda", "--zl-devices=5", "-n", "2", "-p", "no:cacheprovider", *NO_HYPOTHESIS
    )
    result.assert_outcomes(passed=1)
    assert (one_test.path / "visible_gw0.txt").read_text() == "5"
    assert (one_test.path / "visible_gw1.txt").read_text() == "5"
