"""``adapters.compiler``: FlagTree or upstream Triton, told apart by the installed distributions'
metadata (both install the package ``triton``)."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest

from pytest_zlbench.adapters import compiler


class FakeDist:
    def __init__(self, version: str, root: Path | None = None) -> None:
        self.version = version
        self.root = root
        self.files = [importlib.metadata.PackagePath("triton/__init__.py")] if root else None

    def locate_file(self, path: Any) -> Path:
        assert self.root is not None
        return self.root / str(path)


def installed_with(monkeypatch: pytest.MonkeyPatch, dists: dict[str, FakeDist]) -> Any:
    def distribution(name: str) -> FakeDist:
        if name not in dists:
            raise importlib.metadata.PackageNotFoundError(name)
        return dists[name]

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)
    return compiler.installed()


def test_upstream_triton_is_named_with_its_version(monkeypatch: pytest.MonkeyPatch) -> None:
    assert installed_with(monkeypatch, {"triton": FakeDist("3.6.0")}) == {
        "name": "Triton",
        "version": "3.6.0",
    }


def test_flagtree_is_told_from_its_distribution_name(monkeypatch: pytest.MonkeyPatch) -> None:
    found = installed_with(monkeypatch, {"flagtree": FakeDist("0.5.0+3.5")})
    assert found == {"name": "FlagTree", "version": "0.5.0+3.5"}


def test_neither_installed_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    assert installed_with(monkeypatch, {}) is None


def test_with_both_installed_the_one_whose_files_import_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    package = tmp_path / "site" / "triton"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(__import__("sys").modules, "triton", raising=False)
    dists = {
        "flagtree": FakeDist("0.5.0", tmp_path / "elsewhere"),
        "triton": FakeDist("3.5.0", tmp_path / "site"),
    }
    assert installed_with(monkeypatch, dists) == {"name": "Triton", "version": "3.5.0"}
    dists["flagtree"] = FakeDist("0.5.0", tmp_path / "site")
    assert installed_with(monkeypatch, dists)["name"] == "FlagTree"
