"""One device trace of several sections (``adapters.replay_samples.split_sections``): the
kernel timer of a one-process pair reads A | B B | A in one trace, the device idle between
sections, and cuts it at the widest gaps."""

from __future__ import annotations

import pytest

from pytest_zlbench.adapters.replay_samples import SECTION_GAP_MS, split_sections

Span = tuple[float, float]


def section(start: float, replays: int, per: int, cost: float = 0.001) -> list[Span]:
    """``replays`` back-to-back replays of a graph of ``per`` activities from ``start``."""
    return [(start + i * cost, start + (i + 1) * cost) for i in range(replays * per)]


def trace(*parts: tuple[int, int], gap: float = SECTION_GAP_MS) -> list[Span]:
    """Sections of (replays, activities per replay), the device idle ``gap`` ms between them."""
    spans: list[Span] = []
    at = 0.0
    for replays, per in parts:
        spans += section(at, replays, per)
        at = spans[-1][1] + gap
    return spans


def test_sections_are_cut_at_the_pauses_whatever_each_graph_holds() -> None:
    spans = trace((5, 3), (10, 7), (5, 3))
    got = split_sections(spans, [5, 10, 5])
    assert got is not None
    assert [len(s) for s in got] == [15, 70, 15]
    assert [s[0] for s in got] == [spans[0], spans[15], spans[85]]


def test_one_section_is_the_whole_trace() -> None:
    spans = trace((10, 4))
    assert split_sections(spans, [10]) == [spans]


@pytest.mark.parametrize(
    "spans",
    [
        pytest.param(trace((5, 3), (10, 3), (5, 3), gap=0.0), id="no pause"),
        pytest.param(trace((5, 3), (10, 3), (5, 3), gap=SECTION_GAP_MS / 4), id="pause too short"),
        pytest.param(trace((5, 3), (10, 3)), id="a section missing"),
        pytest.param(trace((5, 3), (10, 3), (4, 3)), id="a replay missing"),
        pytest.param([], id="nothing recorded"),
    ],
)
def test_a_trace_that_cannot_be_cut_cleanly_is_refused(spans: list[Span]) -> None:
    assert split_sections(spans, [5, 10, 5]) is None


def test_a_gap_inside_a_section_nearly_as_wide_as_a_pause_makes_the_cut_ambiguous() -> None:
    spans = trace((5, 3), (10, 3), (5, 3))
    hiccup = 20  # inside the second section: the host was late to launch a replay
    late = [(s + SECTION_GAP_MS / 2, e + SECTION_GAP_MS / 2) for s, e in spans[hiccup:]]
    assert split_sections(spans[:hiccup] + late, [5, 10, 5]) is None


def test_overlapping_activities_of_two_streams_are_no_gap() -> None:
    # a long activity on one stream covers a short pause-free stretch of the other's
    spans = trace((5, 2), (10, 2), (5, 2))
    spans[3] = (spans[3][0], spans[3][0] + 0.5)
    got = split_sections(sorted(spans), [5, 10, 5])
    assert got is not None
    assert [len(s) for s in got] == [10, 20, 10]
