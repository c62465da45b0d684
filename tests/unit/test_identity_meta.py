"""The informational identity fields: the card's driver, clocks and power limit (a fake
``nvidia-smi`` on PATH), the checkouts' commits (a temporary git repository) and versions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from pytest_zlbench.adapters import device_info
from pytest_zlbench.adapters.device_info import NVIDIA_FIELDS, device_state
from pytest_zlbench.recording import identity
from pytest_zlbench.recording.identity import checkouts, git_state, version_of

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="needs git")


def fake_tool(folder: Path, name: str, body: str) -> Path:
    """An executable ``name`` in ``folder`` running ``body`` (Python) with its arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    path.chmod(0o755)
    return path


SMI = """
with open(sys.argv[0] + ".args", "w") as handle:
    handle.write("\\n".join(sys.argv[1:]))
print("00000000:19:00.0, 570.124.06, 1980, 3201, 1980, 3201, 700.00, P0, 41")
print("00000000:3B:00.0, 570.124.06, [N/A], 3201, 1980, 3201, [Not Supported], P0, 40")
"""


@pytest.fixture
def path_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Put ``tmp_path/bin`` first on PATH; returns that folder."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return folder


def test_nvidia_smi_is_asked_for_the_runs_cards(path_with: Path) -> None:
    tool = fake_tool(path_with, "nvidia-smi", SMI)
    state = device_state("cuda", ["00000000:19:00.0", "00000000:3B:00.0"])
    args = Path(str(tool) + ".args").read_text().splitlines()
    assert args == [
        f"--query-gpu={','.join(NVIDIA_FIELDS)}",
        "--format=csv,noheader,nounits",
        "-i",
        "00000000:19:00.0,00000000:3B:00.0",
    ]
    assert state["tool"] == "nvidia-smi"
    first, second = state["cards"]
    assert first == {
        "pci_bus_id": "00000000:19:00.0",
        "driver_version": "570.124.06",
        "sm_clock_mhz": 1980,
        "mem_clock_mhz": 3201,
        "sm_clock_max_mhz": 1980,
        "mem_clock_max_mhz": 3201,
        "power_limit_w": 700,
        "pstate": "P0",
        "temperature_c": 41,
    }
    assert second["sm_clock_mhz"] is None
    assert second["power_limit_w"] is None
    json.dumps(state)  # goes into run_identity.json as is


def test_without_cards_card_0_is_asked(path_with: Path) -> None:
    tool = fake_tool(path_with, "nvidia-smi", SMI)
    device_state("cuda", [])
    assert Path(str(tool) + ".args").read_text().splitlines()[-1] == "0"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("sys.stderr.write('No devices were found\\n'); sys.exit(6)", "No devices were found"),
        ("print('garbage')", "unexpected line"),
        ("pass", "printed no card"),
        ("import time; time.sleep(30)", "TimeoutExpired"),
    ],
)
def test_a_failing_tool_is_null_with_its_reason(
    path_with: Path, monkeypatch: pytest.MonkeyPatch, body: str, reason: str
) -> None:
    monkeypatch.setattr(device_info, "STATE_TIMEOUT", 1.0)
    fake_tool(path_with, "nvidia-smi", body)
    state = device_state("cuda", ["0"])
    assert state["tool"] is None
    assert reason in state["reason"]
    assert "\n" not in state["reason"]


def test_no_tool_at_all(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(device_info.importlib.util, "find_spec", lambda name: None)
    assert device_state("cuda", ["0"]) == {
        "tool": None,
        "reason": "neither nvidia-smi on PATH nor pynvml importable",
    }


def test_pynvml_when_nvidia_smi_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[str] = []
    fake = types.ModuleType("pynvml")
    fake.NVML_CLOCK_SM, fake.NVML_CLOCK_MEM, fake.NVML_TEMPERATURE_GPU = 0, 1, 0  # type: ignore[attr-defined]
    fake.nvmlInit = lambda: calls.append("init")  # type: ignore[attr-defined]
    fake.nvmlShutdown = lambda: calls.append("shutdown")  # type: ignore[attr-defined]
    fake.nvmlDeviceGetHandleByIndex = lambda i: ("h", i)  # type: ignore[attr-defined]
    fake.nvmlSystemGetDriverVersion = lambda: b"570.1"  # type: ignore[attr-defined]
    fake.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId=b"00000000:19:00.0")  # type: ignore[attr-defined]
    fake.nvmlDeviceGetClockInfo = lambda h, c: (1755, 2619)[c]  # type: ignore[attr-defined]
    fake.nvmlDeviceGetMaxClockInfo = lambda h, c: (1980, 3201)[c]  # type: ignore[attr-defined]
    fake.nvmlDeviceGetPowerManagementLimit = lambda h: 700000  # type: ignore[attr-defined]
    fake.nvmlDeviceGetPerformanceState = lambda h: 0  # type: ignore[attr-defined]
    fake.nvmlDeviceGetTemperature = lambda h, s: 40  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(device_info.importlib.util, "find_spec", lambda name: object())
    state = device_state("cuda", ["0"])
    assert state["tool"] == "pynvml"
    (card,) = state["cards"]
    assert card["driver_version"] == "570.1"
    assert (card["sm_clock_mhz"], card["mem_clock_max_mhz"], card["power_limit_w"]) == (
        1755,
        3201,
        700.0,
    )
    assert calls == ["init", "shutdown"]


@pytest.mark.parametrize("backend", ["cpu", "rocm", "musa", "ascend"])
def test_other_backends_are_null_with_their_tool_named(backend: str) -> None:
    state = device_state(backend, ["0"])
    assert state["tool"] is None
    assert state["reason"].startswith(f"{backend} backend: not read")
    if backend != "cpu":
        assert device_info.STATE_TOOLS[backend].split()[0] in state["reason"]


# --------------------------------------------------------------------------------------------
# checkouts and versions


def git(folder: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    done = subprocess.run(
        ["git", "-C", str(folder), *args], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.strip()


def repo(folder: Path) -> str:
    folder.mkdir(parents=True)
    git(folder, "init", "-q")
    (folder / "pkg").mkdir()
    (folder / "pkg" / "__init__.py").write_text("")
    git(folder, "add", "pkg")
    git(folder, "commit", "-qm", "one")
    return git(folder, "rev-parse", "HEAD")


@needs_git
def test_git_state_of_a_work_tree(tmp_path: Path) -> None:
    head = repo(tmp_path / "gems")
    assert git_state(tmp_path / "gems") == {
        "path": str((tmp_path / "gems").resolve()),
        "commit": head,
        "dirty": False,
    }
    (tmp_path / "gems" / "new.txt").write_text("x")  # untracked counts as dirty
    assert git_state(tmp_path / "gems" / "pkg")["dirty"] is True  # type: ignore[index]
    # only a work tree that tracks the file counts
    assert git_state(tmp_path / "gems" / "pkg", tracked="__init__.py") is not None
    (tmp_path / "gems" / "venv" / "triton").mkdir(parents=True)
    (tmp_path / "gems" / "venv" / "triton" / "__init__.py").write_text("")
    assert git_state(tmp_path / "gems" / "venv" / "triton", tracked="__init__.py") is None


@needs_git
def test_outside_a_work_tree_or_without_git_is_null(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plain").mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert git_state(tmp_path / "plain") is None
    repo(tmp_path / "gems")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert git_state(tmp_path / "gems") is None


@needs_git
def test_a_hung_git_is_null(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path_with: Path
) -> None:
    repo(tmp_path / "gems")
    fake_tool(path_with, "git", "import time; time.sleep(30)")
    monkeypatch.setattr(identity, "GIT_TIMEOUT", 0.5)
    assert git_state(tmp_path / "gems") is None


@needs_git
def test_checkouts_name_the_rootdir_and_a_triton_work_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gems = repo(tmp_path / "gems")
    tree = repo(tmp_path / "flagtree")
    fake = types.ModuleType("triton")
    fake.__file__ = str(tmp_path / "flagtree" / "pkg" / "__init__.py")
    monkeypatch.setitem(sys.modules, "triton", fake)
    found = checkouts(tmp_path / "gems")
    assert found["flaggems"]["commit"] == gems  # type: ignore[index]
    assert found["triton"]["commit"] == tree  # type: ignore[index]


@needs_git
def test_a_rootdir_the_enclosing_work_tree_does_not_track_has_no_checkout(
    tmp_path: Path,
) -> None:
    # a FlagGems export (git archive) unpacked into an ignored folder of another checkout is
    # not that checkout's code: its commit would be a plausible-looking wrong identity
    repo(tmp_path / "tool")
    (tmp_path / "tool" / ".gitignore").write_text("/export/\n")
    (tmp_path / "tool" / "export" / "benchmark").mkdir(parents=True)
    (tmp_path / "tool" / "export" / "pytest.ini").write_text("[pytest]\n")
    assert checkouts(tmp_path / "tool" / "export")["flaggems"] is None
    assert checkouts(tmp_path / "tool")["flaggems"] is not None


@needs_git
def test_versions_from_metadata_then_version_then_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert version_of("pytest", "pytest") == pytest.__version__
    head = repo(tmp_path / "gems")
    fake = types.ModuleType("zl_fake_gems")
    fake.__file__ = str(tmp_path / "gems" / "pkg" / "__init__.py")
    monkeypatch.setitem(sys.modules, "zl_fake_gems", fake)
    assert version_of("zl-fake-gems", "zl_fake_gems") == f"git:{head}"
    (tmp_path / "gems" / "pkg" / "__init__.py").write_text("x = 1\n")
    assert version_of("zl-fake-gems", "zl_fake_gems") == f"git:{head}+dirty"
    fake.__version__ = "5.3.4"  # type: ignore[attr-defined]
    assert version_of("zl-fake-gems", "zl_fake_gems") == "5.3.4"
    assert version_of("zl-not-installed", "zl_not_installed_anywhere") is None
