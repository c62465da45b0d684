"""report.html answers first: a headline counted from each operator's own fields, a legend for
every colour, every column defined on the page, notes as footnotes, and a page of 1,000
operators that stays small enough to open."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_zlbench.core import report, result, screening
from pytest_zlbench.core.pairing import RoundInput
from pytest_zlbench.core.records import Row
from zl_testing import H200_IDENTITY as IDENTITY

NODE = "examples/demo/test_x.py::test_x"


def op_result(op: str, deltas: dict[str, list[float]]) -> screening.OpResult:
    """One operator's result: per shape, side B's per-round delta (side A 0.2 ms)."""
    rounds = []
    for k in range(len(next(iter(deltas.values())))):
        a = [Row(op, "float32", s, 0.2, 0.3, timer="direct", node=NODE) for s in deltas]
        b = [
            Row(op, "float32", s, 0.2 * (1 + d[k]), 0.3, timer="direct", node=NODE)
            for s, d in deltas.items()
        ]
        order = "AB" if k % 2 == 0 else "BA"
        rounds.append(RoundInput(k + 1, order, a, b, identity_a=IDENTITY, identity_b=IDENTITY))
    return screening.aggregate(op, rounds)


def entry(op: str, **fields: Any) -> dict[str, Any]:
    """A result document's operator entry with just the fields the headline reads."""
    return {"op": op, "status": "complete", "verdict": "NO_TRITON", **fields}


def test_the_headline_counts_each_operator_from_its_own_fields() -> None:
    doc = {
        "kind": "screen",
        "switch": {"DEMO_SLOW_SOFTMAX": "1"},
        "settings": {"rounds": 3},
        "operators": [
            entry("softmax", judged=4, beyond=4, slower=4, faster=0, effect_pct=130.0),
            entry("relu", judged=4, beyond=0, slower=0, faster=0),
            entry("mm", judged=4, beyond=1, slower=0, faster=1, effect_pct=-12.5),
            entry("abs", judged=None, beyond=None),  # one round: not judged
            entry("gelu", judged=4, beyond=2, slower=1, faster=1, effect_pct=3.0),
            {"op": "fft", "status": "failed", "judged": 4, "beyond": 4, "slower": 4},
        ],
    }
    assert report.headline(doc) == (
        "1 of 6 operators slower beyond noise, 1 faster, 1 mixed, 1 with no change beyond "
        "noise, 2 not judged; switch DEMO_SLOW_SOFTMAX=1 on side B, at most 3 rounds. Beyond "
        "noise: softmax +130.0 %, mm -12.5 %, gelu +3.0 %."
    )
    control = {"kind": "screen", "switch": {}, "operators": [entry("relu", judged=4, beyond=0)]}
    assert report.headline(control) == (
        "0 of 1 operator slower beyond noise, 0 faster, 1 with no change beyond noise, "
        "0 not judged; switch none (A/A control)."
    )


def demo_like() -> dict[str, Any]:
    """The CPU demo's screen: softmax several times slower in every round, the others
    wandering within a few percent."""
    shapes = ["[(64, 64)]", "[(256, 512)]"]
    rng = random.Random(0)
    results = [op_result("softmax", {s: [4.0, 4.2, 3.9] for s in shapes})]
    for op in ("relu", "layer_norm", "mm"):
        results.append(
            op_result(op, {s: [rng.uniform(-0.03, 0.03) for _ in range(3)] for s in shapes})
        )
    judged = screening.judge_screen(results)
    return result.document(
        result.SCREEN,
        [r.to_json() for r in judged],
        settings={"switch": {"DEMO_SLOW_SOFTMAX": "1"}, "rounds": 3},
    )


def test_the_page_opens_with_the_headline_and_defines_every_colour_and_column() -> None:
    doc = demo_like()
    page = report.html(doc, None, {})
    body = page.split("<body>", 1)[1]
    first = re.search(r"<p[^>]*>(.*?)</p>", body)
    assert first is not None
    assert first.group(1) == report.headline(doc)
    assert "slower beyond noise" in first.group(1)
    for colour, meaning in report.COLOURS.values():  # each row colour has its legend
        assert f"background:{colour}" in page
        assert meaning in page
    headers = re.findall(r'<th><a href="#col-([^"]+)"', page)
    assert headers
    for name in set(headers):
        assert f'<dt id="col-{name}">' in page, name
    assert 'id="col-corrected_median_pct"' in page
    # a NO_TRITON operator compared no IR stage
    assert "<td>ttgir</td>" not in page


def test_a_report_of_1000_operators_stays_under_5_mb(tmp_path: Path) -> None:
    """Each picture was about 70 KB of glyph paths and every one was inline: 1,000 operators
    made tens of MB. Measured with real pictures: matplotlib's overview of all 1,000 and one
    operator's picture standing for each."""
    pytest.importorskip("matplotlib")
    from pytest_zlbench.adapters import plot

    rng = random.Random(1)
    shapes = [f"[{2**k}, {2**k}]" for k in range(6, 14)]  # 8 shapes a operator
    results = []
    for i in range(1000):
        move = 0.4 if i % 50 == 0 else 0.0  # 20 operators slower
        deltas = {s: [move + rng.gauss(0, 0.01) for _ in range(3)] for s in shapes}
        results.append(op_result(f"op_{i:04d}", deltas))
    judged = screening.judge_screen(results)
    entries = [r.to_json() for r in judged]
    doc = result.document(result.SCREEN, entries, settings={"switch": {"X": "1"}, "rounds": 3})
    assert plot.write(tmp_path / "delta.svg", entries[0])
    picture = (tmp_path / "delta.svg").read_text()
    assert plot.write_overview(tmp_path / "overview.svg", doc)
    overview = (tmp_path / "overview.svg").read_text()
    page = report.html(doc, overview, {e["op"]: picture for e in entries})
    size = len(page.encode())
    assert size <= 5 * 1024 * 1024, size
    assert page.count("<svg") == 1 + report.DETAILED
    assert page.count('/ab.json">') == 1000 - report.DETAILED  # the others: linked beside it
    # every operator beyond noise is shown whole, wherever it stands in the table
    sections = page.split("<h2 id=")
    for i in range(0, 1000, 50):
        (section,) = [s for s in sections if s.startswith(f'"op-op_{i:04d}"')]
        assert "<svg" in section
        assert "r3_delta_pct" in section


def test_an_operator_of_thousands_of_shapes_keeps_the_page_small() -> None:
    """5,000 shapes of one operator made a 5.7 MB page (every shape a row): the page shows its
    most telling shapes, says how many of how many, and links ab.json, which holds them all."""
    rng = random.Random(2)
    deltas = {f"[{k}]": [rng.gauss(0, 0.01) for _ in range(2)] for k in range(5000)}
    deltas["[7]"] = [0.5, 0.5]
    (judged,) = screening.judge_screen([op_result("big", deltas)])
    entry = judged.to_json()
    doc = result.document(result.SCREEN, [entry], settings={"switch": {"X": "1"}, "rounds": 2})
    page = report.html(doc)
    assert len(page.encode()) < 500_000, len(page.encode())
    section = page.split('<h2 id="op-big">')[1]
    assert section.count("<tr>") == report.SHAPES_MOST + 1  # and the header
    assert f"{report.SHAPES_MOST} of 5000 shapes shown" in section
    assert 'href="big/ab.json"' in section
    assert "<td>[7]</td>" in section  # the shape beyond noise is among them
