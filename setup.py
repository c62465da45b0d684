"""Packaging that pyproject.toml cannot state: the curated data lives at the top of the
repository (``ops/``) and ships inside the package as ``pytest_zlbench/ops``, beside the packages
found in ``src/``. Everything else is in pyproject.toml."""

from __future__ import annotations

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages("src", include=["pytest_zlbench*"]), "pytest_zlbench.ops"],
    package_dir={"": "src", "pytest_zlbench.ops": "ops"},
)
