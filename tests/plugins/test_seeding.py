"""Recorded runs seed Python's, NumPy's and torch's generators per test, the same way in every
process: the two sides of a screen draw the same random arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DRAWS = """
import json
import os
import random

import numpy
import pytest
import torch


def draw(name):
    with open(os.environ["DRAWS_FILE"], "a") as handle:
        values = [random.random(), float(numpy.random.rand()), float(torch.rand(1))]
        handle.write(json.dumps([name, values]) + "\\n")


def test_one(zl_bench):
    draw("one")
    zl_bench(lambda: None, op="one")


def test_two(zl_bench):
    draw("two")
    zl_bench(lambda: None, op="two")
"""


def draws(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, name: str, *args: str
) -> tuple[dict[str, list[float]], dict[str, object]]:
    out = pytester.path / name
    file = pytester.path / f"{name}.jsonl"
    pytester.makepyfile(test_draws=DRAWS)
    monkeypatch.setenv("DRAWS_FILE", str(file))
    result = pytester.runpytest_subprocess(
        "--zl-backend=cpu", f"--zl-out={out}", "-p", "no:cacheprovider", *args
    )
    assert result.ret == 0, result.outlines
    found = dict(json.loads(line) for line in Path(file).read_text().splitlines())
    identity = json.loads((out / "run_identity.json").read_text())
    return found, identity


def test_every_test_draws_the_same_in_every_process_whatever_ran_before(
    zl_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, identity = draws(zl_pytester, monkeypatch, "first")
    again, _ = draws(zl_pytester, monkeypatch, "again")
    alone, _ = draws(zl_pytester, monkeypatch, "alone", "-k", "two")
    assert first == again
    assert alone == {"two": first["two"]}  # test_one did not run before it this time
    assert first["one"] != first["two"]  # per test, not one seed for the session
    assert identity["seed"]["base"] == 1234  # type: ignore[index]
